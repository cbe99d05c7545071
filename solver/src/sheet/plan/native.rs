//! Native code for the plan: its entries compiled, once per shape, into machine code with
//! [Cranelift](https://cranelift.dev), in the full solve's order, for full solves and for
//! recomputations that reach many variables.
//!
//! **Why.** The plan's interpreter ([`Plan::eval`]) dispatches once per step, and which step
//! comes next depends on the data: on the anchor workload the processor mispredicts most of
//! those dispatches, and a full solve is bound by them, not by arithmetic or memory. Compiled,
//! an entry is straight-line code: loads, checked arithmetic, and branches that are never taken
//! in the common case.
//!
//! **What the code does.** Each compiled function covers a run of variables of the order (a
//! *chunk*); a run starts at the chunk holding a given position. For each variable `i`, in
//! order:
//! 1. unless `pending[i]` is set (every variable, in a full solve), go on to the next; else
//!    clear it and count an evaluation;
//! 2. if `ok[i]` is 0 (its entry changed after compiling), or its entry holds a step this module
//!    does not compile (a decimal, a general formula, a program with a stack, DIVIDE), call
//!    `slow(frame, i)`: the caller evaluates it the interpreter's way, stores it, marks its
//!    dependents and says whether it changed;
//! 3. else compute the entry on `i64`s from its start. A read of a value that is not whole
//!    ([`NOT_WHOLE`]), an overflow, or a previous value that was not whole sends the variable to
//!    `slow` instead, which then takes exactly the interpreter's path (whole, then exact);
//! 4. an unchanged value stops there (early cutoff); a changed one is stored in `ints[i]`,
//!    logged as `[i, old, new]`, and marks its dependents pending.
//!
//! So the native code only ever answers where the interpreter's whole-number path would answer
//! the same, and everything else goes through the one definition of values. A property test
//! holds native solves and recomputations (values and reports) to interpreted ones on values
//! that overflow, divide and are not whole.
//!
//! **Invariants.**
//! - The code was compiled from the entries, dependents and order of one plan. It keeps that
//!   order, which stays topological while every new edge goes forward in it
//!   ([`Native::precedes`]); the plan drops the code when one does not, or when a variable is
//!   added or removed. It clears `ok[i]` when variable `i`'s modifiers change or it gains a
//!   dependent, so the code never computes a stale entry nor misses a dependent.
//! - The buffers hold at least [`Native::span`] elements when the code runs (every index
//!   compiled in is below it), the log room for every change (or one entry, overwritten, in a
//!   full solve), and none of them moves while it runs (`slow` writes only existing elements).
//! - No variable before the run's first position is pending.
//! - The code's memory lives as long as the [`Native`], which is shared by `Arc` between copies
//!   of a shape and freed when the last one is dropped.

use super::{FoldOf, Plan, Step};
use crate::modifier::ModKind;
use crate::sheet::values::NOT_WHOLE;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    AbiParam, Block, InstBuilder, MemFlagsData, SigRef, Type, UserFuncName, Value, types,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};
use formula::IntOp;
use std::any::Any;
use std::fmt;
use std::mem::offset_of;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;

/// Steps compiled into one function, about: large enough that calls between chunks cost
/// nothing, small enough that Cranelift's per-function work (register allocation) stays linear
/// and that a run starting late in the order skips few variables.
const STEPS_PER_CHUNK: usize = 1024;

/// About how many bytes of machine code one step compiles to (measured: 60–65 on the anchor
/// workload).
#[cfg(target_os = "linux")]
const CODE_PER_STEP: usize = 64;

/// Marks a change in the log that `slow` computed (its delta is the caller's).
pub(in crate::sheet) const SLOW_CHANGE: i64 = 1 << 40;

/// The callback for a variable the code does not compute: `slow(frame, i)`.
type Slow = extern "C" fn(frame: *mut Frame, i: u32);

/// One compiled chunk: `chunk(frame)`.
type Chunk = unsafe extern "C" fn(frame: *mut Frame);

/// What a run of the code works on, read by the code at fixed offsets.
#[repr(C)]
struct Frame {
    /// The sheet's whole values, by variable index.
    ints: *mut i64,
    /// Per variable: whether the code computes its current entry.
    ok: *const u8,
    /// Per variable: whether it is to be evaluated in this run (cleared when it is).
    pending: *mut u8,
    /// The changes, in order: `[variable, old value, new value]`, or
    /// `[variable | SLOW_CHANGE, 0, 0]`.
    log: *mut [i64; 3],
    log_len: u64,
    /// Where entry `n` goes: `log[n & log_mask]` (0 in a full solve, which needs no log and
    /// gives it one entry to overwrite; all ones otherwise).
    log_mask: u64,
    /// How many variables were evaluated.
    evaluated: u64,
    slow: Slow,
    callback: *mut Callback<'static>,
}

/// What a run found: how many variables it evaluated, and the changes it logged.
pub(in crate::sheet) struct Ran {
    pub(in crate::sheet) evaluated: usize,
    pub(in crate::sheet) logged: usize,
}

/// A plan's entries as native code (see the module docs).
pub(in crate::sheet) struct Native {
    chunks: Vec<Chunk>,
    /// The position in the order of each chunk's first variable.
    starts: Vec<u32>,
    /// The compiled code's memory (behind a mutex only so that `Native` is `Sync`; nothing
    /// locks it but `drop`).
    module: Mutex<Option<JITModule>>,
    /// Every variable index the code reads or writes is below this.
    pub(in crate::sheet) span: usize,
    /// Each variable's position in the order compiled (`u32::MAX`: not in it), by index.
    pos: Vec<u32>,
    /// How many variables are compiled to native steps (the rest call `slow`).
    compiled: usize,
    /// How many variables the code covers.
    vars: usize,
    /// The machine code's size, in bytes (its pages are the JIT's own, not the allocator's).
    pub(in crate::sheet) code_bytes: usize,
}

impl fmt::Debug for Native {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Native")
            .field("chunks", &self.chunks.len())
            .field("vars", &self.vars)
            .field("compiled", &self.compiled)
            .field("span", &self.span)
            .finish()
    }
}

impl Drop for Native {
    fn drop(&mut self) {
        let module = self.module.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        self.chunks.clear();
        if let Some(module) = module {
            // SAFETY: the function pointers into this memory were in `chunks`, now cleared; a
            // call runs only through `&Native`, so none is running while it is dropped.
            unsafe { module.free_memory() };
        }
    }
}

/// The caller's closure for `slow`, and a panic it raised (resumed once the native code has
/// returned: a panic must not unwind through frames without unwind information).
struct Callback<'a> {
    f: &'a mut dyn FnMut(u32) -> bool,
    panic: Option<Box<dyn Any + Send>>,
}

extern "C" fn trampoline(frame: *mut Frame, i: u32) {
    // SAFETY: `frame` is the `Frame` that `Native::run` passed to the code, and its callback
    // the one it made; both outlive the run and nothing else borrows them during this call.
    let frame = unsafe { &mut *frame };
    let cb = unsafe { &mut *frame.callback };
    if cb.panic.is_some() {
        return;
    }
    match catch_unwind(AssertUnwindSafe(|| (cb.f)(i))) {
        Ok(false) => {}
        Ok(true) => {
            // SAFETY: the log holds a place for every variable, and each is evaluated (so
            // logged) at most once per run: `log_len` is below `span`.
            unsafe {
                *frame.log.add((frame.log_len & frame.log_mask) as usize) = [i64::from(i) | SLOW_CHANGE, 0, 0]
            };
            frame.log_len += 1;
        }
        Err(p) => cb.panic = Some(p),
    }
}

/// The buffers a run works on (see [`Native::run`]).
pub(in crate::sheet) struct Buffers {
    pub(in crate::sheet) ints: *mut i64,
    pub(in crate::sheet) pending: *mut u8,
    pub(in crate::sheet) log: *mut [i64; 3],
    /// All ones for a log with room for every variable; 0 for a log of one entry, which every
    /// change overwrites (a full solve, which reports nothing).
    pub(in crate::sheet) log_mask: u64,
}

impl Native {
    /// Runs the code from position `from` of its order on: every variable marked in `pending`
    /// is evaluated (and unmarked); one whose value changes is stored in `ints`, logged in
    /// `log` with its old and new values, and marks its dependents. A variable the code does not
    /// compute goes to `slow(i)`, which must do all of that itself except the log entry, and
    /// returns whether it changed (then logged with [`SLOW_CHANGE`]).
    ///
    /// # Safety
    /// `ints` and `pending` must point to at least [`Native::span`] elements, and `log` to room
    /// for `span` entries (one, with a `log_mask` of 0), all staying in place during the run; `slow` must not access them
    /// except through `Values` writing existing elements. Every variable before `from` must be
    /// unmarked.
    pub(in crate::sheet) unsafe fn run(
        &self,
        from: usize,
        buffers: &Buffers,
        ok: &[u8],
        slow: &mut dyn FnMut(u32) -> bool,
    ) -> Ran {
        if ok.len() < self.span {
            // Not the flags this code was compiled with: `Plan::native` never hands them out.
            return Ran { evaluated: 0, logged: 0 };
        }
        let mut cb = Callback { f: slow, panic: None };
        let mut frame = Frame {
            ints: buffers.ints,
            ok: ok.as_ptr(),
            pending: buffers.pending,
            log: buffers.log,
            log_len: 0,
            log_mask: buffers.log_mask,
            evaluated: 0,
            slow: trampoline,
            // The callback lives on this stack frame for the whole run; the code only hands
            // the pointer back to `trampoline`.
            callback: (&mut cb as *mut Callback<'_>).cast(),
        };
        let first = self.starts.partition_point(|&p| p as usize <= from).saturating_sub(1);
        for chunk in self.chunks.get(first..).unwrap_or_default() {
            // SAFETY: the chunk reads and writes the buffers below `span` only (the caller
            // guarantees them, `ok` was checked above) and calls `trampoline` with `frame`,
            // which outlives the call.
            unsafe { chunk(&mut frame) };
        }
        if let Some(p) = cb.panic {
            resume_unwind(p);
        }
        Ran { evaluated: frame.evaluated as usize, logged: frame.log_len as usize }
    }

    /// The position of variable `i` in the code's order, if the code covers it.
    pub(in crate::sheet) fn position(&self, i: usize) -> Option<usize> {
        self.pos.get(i).filter(|&&p| p != u32::MAX).map(|&p| p as usize)
    }

    /// Whether an edge `from → to` keeps the compiled order topological: `from` comes first.
    pub(in crate::sheet) fn precedes(&self, from: usize, to: usize) -> bool {
        match (self.position(from), self.position(to)) {
            (Some(f), Some(t)) => f < t,
            _ => false,
        }
    }

    /// How many variables the code covers, and how many of them it computes itself.
    pub(in crate::sheet) fn coverage(&self) -> (usize, usize) {
        (self.vars, self.compiled)
    }
}

/// Compiles `plan`'s entries for the variables of `order`, in that order, or says why not
/// (an unsupported host: the plan then keeps interpreting).
// long: the module, the signatures and the chunk loop, set up and run in one place.
pub(super) fn compile(plan: &Plan, order: &[u32]) -> Result<Native, String> {
    // Compile time matters as well as the code (about 50–75 µs per variable as set here): the
    // code is straight-line, so Cranelift's optimiser buys nothing (measured on the anchor
    // workload: more instructions, twice the compile time) and its verifier only checks our
    // builder; the default register allocator keeps values in registers (the single-pass one
    // cost a third more time per hub change).
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| f.set(k, v).map_err(|e| format!("{k}: {e}"));
    set(&mut flags, "opt_level", "none")?;
    set(&mut flags, "enable_verifier", "false")?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(&mut flags, "is_pic", "false")?;
    let isa = cranelift_native::builder()
        .map_err(|e| format!("this host is not supported: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
    // Large code goes on huge pages (see `pages`): room for far more bytes per step than
    // Cranelift emits (about 60), reserved but not committed until written.
    #[cfg(target_os = "linux")]
    {
        let steps: usize = order
            .iter()
            .map(|&i| plan.vars.get(i as usize).map_or(1, |v| (v.end - v.first) as usize + 1))
            .sum();
        if steps.saturating_mul(CODE_PER_STEP) >= super::pages::HUGE_FROM
            && let Ok(memory) = super::pages::HugeCode::new(steps.saturating_mul(8 * CODE_PER_STEP))
        {
            builder.memory_provider(Box::new(memory));
        }
    }
    let mut module = JITModule::new(builder);
    let target = module.target_config();
    let ptr = target.pointer_type();
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(ptr));
    let mut slow_sig = module.make_signature();
    slow_sig.params.push(AbiParam::new(ptr));
    slow_sig.params.push(AbiParam::new(types::I32));

    let span = plan.vars.len();
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let (mut ids, mut starts) = (Vec::new(), Vec::new());
    let mut compiled = 0;
    let mut code_bytes = 0;
    let mut rest = order;
    while !rest.is_empty() {
        // A chunk: variables until it holds about STEPS_PER_CHUNK steps.
        let mut steps = 0;
        let take = rest
            .iter()
            .position(|&i| {
                steps += plan.vars.get(i as usize).map_or(1, |v| (v.end - v.first) as usize + 1);
                steps > STEPS_PER_CHUNK
            })
            .map_or(rest.len(), |p| p.max(1));
        starts.push((order.len() - rest.len()) as u32);
        let (chunk, tail) = rest.split_at(take);
        rest = tail;
        let id = module
            .declare_function(&format!("chunk{}", ids.len()), Linkage::Local, &sig)
            .map_err(|e| e.to_string())?;
        ctx.func.signature = sig.clone();
        ctx.func.name = UserFuncName::user(0, id.as_u32());
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let frame = b.block_params(entry)[0];
            let field =
                |b: &mut FunctionBuilder<'_>, offset: usize| b.ins().load(ptr, TRUSTED, frame, offset as i32);
            let evaluated = b.declare_var(I64);
            let log_len = b.declare_var(I64);
            let n = b.ins().load(I64, TRUSTED, frame, EVALUATED);
            b.def_var(evaluated, n);
            let n = b.ins().load(I64, TRUSTED, frame, LOG_LEN);
            b.def_var(log_len, n);
            let env = Env {
                frame,
                evaluated,
                log_len,
                ints: field(&mut b, offset_of!(Frame, ints)),
                ok: field(&mut b, offset_of!(Frame, ok)),
                pending: field(&mut b, offset_of!(Frame, pending)),
                ptr,
                slow_sig: b.import_signature(slow_sig.clone()),
                span,
            };
            for &i in chunk {
                if emit_var(&mut b, &env, plan, i) {
                    compiled += 1;
                }
            }
            store_counters(&mut b, &env);
            b.ins().return_(&[]);
            b.seal_all_blocks();
            b.finalize(target);
        }
        module.define_function(id, &mut ctx).map_err(|e| format!("{e:?}"))?;
        code_bytes += ctx.compiled_code().map_or(0, |c| c.code_buffer().len());
        module.clear_context(&mut ctx);
        ids.push(id);
    }
    module.finalize_definitions().map_err(|e| e.to_string())?;
    let chunks = ids
        .iter()
        .map(|&id| {
            let code = module.get_finalized_function(id);
            // SAFETY: `code` is a finalized function with the signature `sig` (one pointer, no
            // result, the platform's C convention), which is `Chunk`.
            unsafe { std::mem::transmute::<*const u8, Chunk>(code) }
        })
        .collect();
    let mut pos = vec![u32::MAX; span];
    for (p, &i) in order.iter().enumerate() {
        if let Some(slot) = pos.get_mut(i as usize) {
            *slot = p as u32;
        }
    }
    Ok(Native {
        chunks,
        starts,
        module: Mutex::new(Some(module)),
        span,
        pos,
        compiled,
        vars: order.len(),
        code_bytes,
    })
}

/// What every variable's code refers to: the frame's fields, loaded once per chunk, and the
/// two counters, kept in registers through the chunk (stored back around calls to `slow`,
/// which logs too, and at the end).
struct Env {
    frame: Value,
    evaluated: Variable,
    log_len: Variable,
    ints: Value,
    ok: Value,
    pending: Value,
    /// The pointer type (the log and `slow` are loaded from the frame where used: fewer
    /// values live through the chunk).
    ptr: Type,
    slow_sig: SigRef,
    span: usize,
}

/// The frame's counters, at their offsets.
const EVALUATED: i32 = offset_of!(Frame, evaluated) as i32;
const LOG_LEN: i32 = offset_of!(Frame, log_len) as i32;

/// Stores the counters kept in registers into the frame.
fn store_counters(b: &mut FunctionBuilder<'_>, env: &Env) {
    let n = b.use_var(env.evaluated);
    b.ins().store(TRUSTED, n, env.frame, EVALUATED);
    let n = b.use_var(env.log_len);
    b.ins().store(TRUSTED, n, env.frame, LOG_LEN);
}

/// Whether variable index `v` is one the code may address: below `span`, its byte offset an
/// immediate.
fn addressable(v: u32, span: usize) -> bool {
    (v as usize) < span && (v as usize) < (i32::MAX as usize) / 16
}

/// The whole start of an entry whose steps all compile, within `span`.
fn compilable(start: Option<i64>, steps: &[Step], span: usize) -> Option<i64> {
    let start = start?;
    let var = |v: u32| addressable(v, span);
    let kind = |k: ModKind| {
        matches!(k, ModKind::Set | ModKind::Add | ModKind::Multiply | ModKind::Max | ModKind::Min)
    };
    let ok = steps.iter().all(|&s| match s {
        Step::Load(v)
        | Step::AddVar(v)
        | Step::SubVar(v)
        | Step::MulVar(v)
        | Step::MinVar(v)
        | Step::MaxVar(v) => var(v),
        Step::LoadAddK(v, _) | Step::LoadMinK(v, _) | Step::LoadMaxK(v, _) => var(v),
        Step::LoadFloorDivK(v, k) => var(v) && k != 0,
        Step::FloorDivK(k) => k != 0,
        Step::LoadAddVar(v, w) | Step::LoadSubVar(v, w) | Step::LoadMinVar(v, w) | Step::LoadMaxVar(v, w) => {
            var(v) && var(w)
        }
        Step::LoadK(_) | Step::AddK(_) | Step::SubK(_) | Step::MulK(_) | Step::MinK(_) | Step::MaxK(_) => {
            true
        }
        Step::FoldSet(_)
        | Step::FoldAdd(_)
        | Step::FoldMul(_)
        | Step::FoldMax(_)
        | Step::SetK(_)
        | Step::CurAddK(_) => true,
        Step::Fold(k, _) | Step::FoldK(k, _) => kind(k),
        Step::OpAt(_) | Step::Program { .. } | Step::General(..) | Step::FoldDec(..) => false,
    });
    ok.then_some(start)
}

/// Emits variable `i`'s code at the current block, leaving the builder at the block after it;
/// whether it was compiled to native steps (else it only calls `slow`).
// long: one variable's code is one sequence of blocks, emitted in the order it runs.
fn emit_var(b: &mut FunctionBuilder<'_>, env: &Env, plan: &Plan, i: u32) -> bool {
    let next = b.create_block();
    if !addressable(i, env.span) {
        // Not addressable: not the code's (the plan hands it to the interpreter: `ok` is
        // shorter than the order, so nothing runs).
        b.ins().jump(next, &[]);
        b.switch_to_block(next);
        return false;
    }
    let at = i as i32;
    let eval = b.create_block();
    let slow = b.create_block();
    b.set_cold_block(slow);
    // Pending? (Every variable is, in a full solve.) Evaluated now: unmarked, counted.
    let pending = b.ins().load(types::I8, TRUSTED, env.pending, at);
    b.ins().brif(pending, eval, &[], next, &[]);
    b.switch_to_block(eval);
    let zero = b.ins().iconst(types::I8, 0);
    b.ins().store(TRUSTED, zero, env.pending, at);
    let n = b.use_var(env.evaluated);
    let n = b.ins().iadd_imm_s(n, 1);
    b.def_var(env.evaluated, n);

    let entry = plan.vars.get(i as usize).and_then(|v| {
        let steps = plan.steps.get(v.first as usize..v.end as usize)?;
        Some((compilable(v.start, steps, env.span)?, steps))
    });
    let succ: Vec<u32> = plan.succ.of(i as usize).to_vec();
    let native = match entry {
        Some((start, steps)) if succ.iter().all(|&s| addressable(s, env.span)) => {
            // Every check ORs into `fail`, and one branch at the end takes it: the code runs
            // straight through (no step can trap: see `floor_div`), and a variable that fails
            // any check is computed again by `slow`, which then does everything.
            let ok = b.ins().load(types::I8, TRUSTED, env.ok, at);
            let fail = b.ins().icmp_imm_s(IntCC::Equal, ok, 0);
            let mut e = Emit { b: &mut *b, env, fail, never: false, low: None };
            let cur = e.entry(start, steps);
            e.reads_checked();
            e.fail_if_eq(cur, NOT_WHOLE);
            let cur = e.value(cur);
            // A value that was not whole is in the side map: `slow` stores it properly.
            let old = e.b.ins().load(I64, TRUSTED, env.ints, at * 8);
            e.fail_if_eq(V::R(old), NOT_WHOLE);
            let (fail, never) = (e.fail, e.never);
            if never {
                // A check on constants fails: the entry always goes the interpreter's way.
                b.ins().jump(slow, &[]);
                b.switch_to_block(slow);
                return finish_slow(b, env, i, next, false);
            }
            let (compare, changed) = (b.create_block(), b.create_block());
            b.ins().brif(fail, slow, &[], compare, &[]);
            b.switch_to_block(compare);
            // Early cutoff: an unchanged value wakes nothing.
            let same = b.ins().icmp(IntCC::Equal, cur, old);
            b.ins().brif(same, next, &[], changed, &[]);
            b.switch_to_block(changed);
            b.ins().store(TRUSTED, cur, env.ints, at * 8);
            // The log: [i, old, new] at `log_len`, then one more.
            let len = b.use_var(env.log_len);
            let mask = b.ins().load(I64, TRUSTED, env.frame, offset_of!(Frame, log_mask) as i32);
            let at_entry = b.ins().band(len, mask);
            let offset = b.ins().imul_imm_s(at_entry, 24);
            let log = b.ins().load(env.ptr, TRUSTED, env.frame, offset_of!(Frame, log) as i32);
            let place = b.ins().iadd(log, offset);
            let index = b.ins().iconst(I64, i64::from(i));
            b.ins().store(TRUSTED, index, place, 0);
            b.ins().store(TRUSTED, old, place, 8);
            b.ins().store(TRUSTED, cur, place, 16);
            let len = b.ins().iadd_imm_s(len, 1);
            b.def_var(env.log_len, len);
            // Dependents are pending (the plan hands a variable whose dependents changed after
            // compiling to `slow`, which marks them from the plan).
            let one = b.ins().iconst(types::I8, 1);
            for s in succ {
                b.ins().store(TRUSTED, one, env.pending, s as i32);
            }
            b.ins().jump(next, &[]);
            true
        }
        _ => {
            b.ins().jump(slow, &[]);
            false
        }
    };
    b.switch_to_block(slow);
    finish_slow(b, env, i, next, native)
}

/// At variable `i`'s slow block: the call to `slow`, then on to `next`; returns `native`.
fn finish_slow(b: &mut FunctionBuilder<'_>, env: &Env, i: u32, next: Block, native: bool) -> bool {
    // `slow` may log: the counters go through the frame around it.
    store_counters(b, env);
    let index = b.ins().iconst(types::I32, i64::from(i));
    let slow = b.ins().load(env.ptr, TRUSTED, env.frame, offset_of!(Frame, slow) as i32);
    b.ins().call_indirect(env.slow_sig, slow, &[env.frame, index]);
    // Both counters are read back from the frame, so that neither lives through the call: the
    // four pointers then fit the registers a call preserves, and nothing is spilled.
    let n = b.ins().load(I64, TRUSTED, env.frame, LOG_LEN);
    b.def_var(env.log_len, n);
    let n = b.ins().load(I64, TRUSTED, env.frame, EVALUATED);
    b.def_var(env.evaluated, n);
    b.ins().jump(next, &[]);
    b.switch_to_block(next);
    native
}

/// One variable's steps being emitted.
struct Emit<'a, 'b> {
    b: &'a mut FunctionBuilder<'b>,
    env: &'a Env,
    /// Whether any check failed so far (an `i8`, 0 or 1).
    fail: Value,
    /// Whether a check on constants failed when compiling: the variable always goes to `slow`.
    never: bool,
    /// The least value read so far: [`NOT_WHOLE`] is the least `i64`, so one check of it at
    /// the end covers every read (a min is cheaper than a compare and an or per read).
    low: Option<Value>,
}

const I64: Type = types::I64;

// `Emit::read` checks reads by their least value: the marker must be the least `i64`.
const _: () = assert!(NOT_WHOLE == i64::MIN);

/// Values and flags are read and written through aligned pointers that never trap.
const TRUSTED: MemFlagsData = MemFlagsData::trusted();

/// An operand: a constant known when compiling (folded there), or a value computed at run time.
#[derive(Clone, Copy)]
enum V {
    K(i64),
    R(Value),
}

/// The checked arithmetic of steps and folds.
#[derive(Clone, Copy)]
enum Arith {
    Add,
    Sub,
    Mul,
}

impl Emit<'_, '_> {
    /// The variable fails when `cond` holds.
    fn fail_on(&mut self, cond: Value) {
        self.fail = self.b.ins().bor(self.fail, cond);
    }

    /// The variable fails when `x == k`.
    fn fail_if_eq(&mut self, x: V, k: i64) {
        match x {
            V::K(x) => self.never |= x == k,
            V::R(x) => {
                let cond = self.b.ins().icmp_imm_s(IntCC::Equal, x, k);
                self.fail_on(cond);
            }
        }
    }

    /// `x` as a value at run time.
    fn value(&mut self, x: V) -> Value {
        match x {
            V::K(k) => self.b.ins().iconst(I64, k),
            V::R(x) => x,
        }
    }

    /// A value read from variable `v`; the variable fails when it is not whole (checked by
    /// `reads_checked`).
    fn read(&mut self, v: u32) -> V {
        let x = self.b.ins().load(I64, TRUSTED, self.env.ints, (v * 8) as i32);
        self.low = Some(match self.low {
            None => x,
            Some(low) => self.b.ins().smin(low, x),
        });
        V::R(x)
    }

    /// The variable fails when any value it read was not whole.
    fn reads_checked(&mut self) {
        if let Some(low) = self.low.take() {
            self.fail_if_eq(V::R(low), NOT_WHOLE);
        }
    }

    /// A constant result, or (`None`: the operation fails on these constants) none.
    fn folded(&mut self, r: Option<i64>) -> V {
        match r {
            Some(r) => V::K(r),
            None => {
                self.never = true;
                V::K(0)
            }
        }
    }

    /// `x op y`; the variable fails on overflow.
    fn checked(&mut self, op: Arith, x: V, y: V) -> V {
        if let (V::K(a), V::K(b)) = (x, y) {
            // Folded by the instruction's own rules, as the interpreter runs it.
            let op = match op {
                Arith::Add => IntOp::AddK(b),
                Arith::Sub => IntOp::SubK(b),
                Arith::Mul => IntOp::MulK(b),
            };
            return self.folded(op.apply_top(a, |_| None));
        }
        let (x, y) = (self.value(x), self.value(y));
        let (v, of) = match op {
            Arith::Add => self.b.ins().sadd_overflow(x, y),
            Arith::Sub => self.b.ins().ssub_overflow(x, y),
            Arith::Mul => self.b.ins().smul_overflow(x, y),
        };
        self.fail_on(of);
        V::R(v)
    }

    /// The smaller of `x` and `y`, or with `max` the larger.
    fn min_max(&mut self, max: bool, x: V, y: V) -> V {
        if let (V::K(a), V::K(b)) = (x, y) {
            let op = if max { IntOp::MaxK(b) } else { IntOp::MinK(b) };
            return self.folded(op.apply_top(a, |_| None));
        }
        let (x, y) = (self.value(x), self.value(y));
        V::R(if max { self.b.ins().smax(x, y) } else { self.b.ins().smin(x, y) })
    }

    /// `floor(x / k)` for a constant `k` other than 0, as `IntOp::FloorDivK`; never traps (a
    /// division by -1 is a negation, checked).
    fn floor_div(&mut self, x: V, k: i64) -> V {
        let x = match x {
            V::K(a) => return self.folded(IntOp::FloorDivK(k).apply_top(a, |_| None)),
            V::R(x) => x,
        };
        V::R(match k {
            1 => x,
            -1 => {
                self.fail_if_eq(V::R(x), i64::MIN);
                self.b.ins().ineg(x)
            }
            k if k > 0 && (k as u64).is_power_of_two() => {
                self.b.ins().sshr_imm_s(x, i64::from(k.trailing_zeros()))
            }
            k => {
                let kv = self.b.ins().iconst(I64, k);
                let q = self.b.ins().sdiv(x, kv);
                let r = self.b.ins().srem(x, kv);
                // A nonzero remainder of the other sign than `k`: the quotient is one lower.
                let cc = if k > 0 { IntCC::SignedLessThan } else { IntCC::SignedGreaterThan };
                let adjust = self.b.ins().icmp_imm_s(cc, r, 0);
                let adjust = self.b.ins().uextend(I64, adjust);
                self.b.ins().isub(q, adjust)
            }
        })
    }

    /// `cur` combined with `v` by a modifier of type `kind` (one of those `compilable` takes).
    fn fold(&mut self, kind: ModKind, cur: V, v: V) -> V {
        match kind {
            ModKind::Set => v,
            ModKind::Add => self.checked(Arith::Add, cur, v),
            ModKind::Multiply => self.checked(Arith::Mul, cur, v),
            ModKind::Max => self.min_max(true, cur, v),
            _ => self.min_max(false, cur, v),
        }
    }

    /// The entry's value from `start`, as `Plan::run_whole` computes it (constants folded
    /// while compiling, by the same rules).
    // long: one arm per kind of step, each the instructions of its `IntOp`.
    fn entry(&mut self, start: i64, steps: &[Step]) -> V {
        let mut cur = V::K(start);
        let mut acc = V::K(0);
        for &s in steps {
            acc = match s {
                Step::Load(v) => self.read(v),
                Step::LoadK(k) => V::K(k),
                Step::AddK(k) => self.checked(Arith::Add, acc, V::K(k)),
                Step::SubK(k) => self.checked(Arith::Sub, acc, V::K(k)),
                Step::MulK(k) => self.checked(Arith::Mul, acc, V::K(k)),
                Step::FloorDivK(k) => self.floor_div(acc, k),
                Step::MinK(k) => self.min_max(false, acc, V::K(k)),
                Step::MaxK(k) => self.min_max(true, acc, V::K(k)),
                Step::AddVar(v) => {
                    let x = self.read(v);
                    self.checked(Arith::Add, acc, x)
                }
                Step::SubVar(v) => {
                    let x = self.read(v);
                    self.checked(Arith::Sub, acc, x)
                }
                Step::MulVar(v) => {
                    let x = self.read(v);
                    self.checked(Arith::Mul, acc, x)
                }
                Step::MinVar(v) => {
                    let x = self.read(v);
                    self.min_max(false, acc, x)
                }
                Step::MaxVar(v) => {
                    let x = self.read(v);
                    self.min_max(true, acc, x)
                }
                Step::LoadAddK(v, k) => {
                    let x = self.read(v);
                    self.checked(Arith::Add, x, V::K(k))
                }
                Step::LoadFloorDivK(v, k) => {
                    let x = self.read(v);
                    self.floor_div(x, k)
                }
                Step::LoadMinK(v, k) => {
                    let x = self.read(v);
                    self.min_max(false, x, V::K(k))
                }
                Step::LoadMaxK(v, k) => {
                    let x = self.read(v);
                    self.min_max(true, x, V::K(k))
                }
                Step::LoadAddVar(v, w) => {
                    let (x, y) = (self.read(v), self.read(w));
                    self.checked(Arith::Add, x, y)
                }
                Step::LoadSubVar(v, w) => {
                    let (x, y) = (self.read(v), self.read(w));
                    self.checked(Arith::Sub, x, y)
                }
                Step::LoadMinVar(v, w) => {
                    let (x, y) = (self.read(v), self.read(w));
                    self.min_max(false, x, y)
                }
                Step::LoadMaxVar(v, w) => {
                    let (x, y) = (self.read(v), self.read(w));
                    self.min_max(true, x, y)
                }
                s => {
                    // A fold: `compilable` took only whole ones of the types `fold` handles.
                    match s.fold() {
                        Some((kind, FoldOf::Formula(_))) => cur = self.fold(kind, cur, acc),
                        Some((kind, FoldOf::Whole(k))) => cur = self.fold(kind, cur, V::K(k)),
                        _ => {}
                    }
                    acc
                }
            };
        }
        cur
    }
}
