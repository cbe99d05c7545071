//! Compiling a [`Draft`] into a [`Ruleset`]: one function per section, in the order sections
//! depend on each other (scopes, formats, defaults, functions, variables and channels, kinds,
//! then objects and global modifiers), each reporting every problem it finds into the
//! [`Compiler`] and going on, so one load reports everything.

use super::{
    Input, Kind, KindId, ModTemplate, Object, ObjectId, OtherMod, Ruleset, Select, Stock, Summary,
    formula_diag,
};
use crate::Map;
use crate::diag::{Diagnostic, Origin, Text, codes};
use crate::draft::{Draft, FormatKind, ModDraft, ObjectDraft, Presence, Raw, RawValue, Selector, VarDecl};
use crate::formats::{Dice, Enumeration, OrderedPair};
use formula::{ErrorCode, ExternalFunction, Format, Value};
use solver::{
    Catalog, Instruction, InstructionError, ModKind, Order, Rules, RulesBuilder, ScopeId, TemplateSpec,
    VarDefId,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What compiling found wrong so far.
#[derive(Default)]
pub(super) struct Compiler {
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    /// Every modifier template, checked once for every character (made when the rules are
    /// built: templates are checked against them).
    catalog: Option<Catalog>,
}

/// The variables declared: where each was declared, and which are channels.
struct Declared {
    origins: Vec<Option<Origin>>,
    channels: HashSet<u32>,
}

/// The kinds compiled, by id and by upper-case name.
struct Kinds {
    list: Vec<Kind>,
    names: Map<String, KindId>,
}

/// Every object by (kind, lower-case key).
/// Objects by kind (its index), then by key in lower case.
type ObjectIndex = Vec<Map<Box<str>, Vec<ObjectId>>>;

/// What compiling an object needs: the rules, the kinds, and every object by (kind, key).
struct Tables<'a> {
    rules: &'a Rules,
    kinds: &'a Kinds,
    index: &'a ObjectIndex,
    /// The draft's objects, by [`ObjectId`] (their keys as written, for hints).
    objects: &'a [ObjectDraft],
}

impl Compiler {
    pub(super) fn run(mut self, draft: Draft) -> Result<Ruleset, Vec<Diagnostic>> {
        self.errors = draft.errors.clone();
        let global_name = draft.global.as_ref().map_or("PC", |t| &*t.text).to_owned();
        let mut b = RulesBuilder::new(&global_name);
        self.scopes(&draft, &mut b);
        self.formats(&draft, &mut b);
        self.defaults(&draft, &mut b);
        self.functions(&draft, &mut b);
        let declared = self.variables(&draft, &mut b);
        let channels: crate::Set<VarDefId> = declared.channels.iter().map(|&c| VarDefId(c)).collect();
        self.input_function(&draft, &mut b, declared.channels.clone());
        self.lookup_function(&draft, &mut b);
        self.fact_functions(&draft, &mut b);
        let kinds = self.kinds(&draft, &b);
        let aggregates = self.aggregates(&draft, &mut b);
        let rules = Arc::new(b.build());
        self.aggregate_errors(&rules, &aggregates);
        let stocks = self.stocks(&draft, &rules);
        let clocks: crate::Set<VarDefId> = draft
            .variables
            .iter()
            .filter(|v| v.clock)
            .filter_map(|v| rules.scope(&v.scope.text).ok().and_then(|s| rules.resolve(s, &v.name.text)))
            .collect();
        self.catalog = Some(Catalog::new(rules.clone()));
        self.part_scopes(&draft, &kinds, &rules);
        let (index, object_kinds) = self.index_objects(&draft, &kinds);
        let tables = Tables { rules: &rules, kinds: &kinds, index: &index, objects: &draft.objects };
        let objects: Vec<Object> =
            draft.objects.iter().zip(&object_kinds).map(|(o, k)| self.object(&tables, o, *k)).collect();
        let global_mods: Vec<ModTemplate> = draft
            .global_mods
            .iter()
            .filter_map(|m| self.modifier(&rules, rules.global(), m, "global modifier"))
            .collect();
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let var_origins: Vec<Origin> = (0..rules.vars().len())
            .map(|i| {
                declared.origins.get(i).cloned().flatten().unwrap_or_else(|| Origin::builtin("(built in)"))
            })
            .collect();
        let modifiers = global_mods.len()
            + objects.iter().map(|o| o.modify.len() + o.other.len() + o.parts.len()).sum::<usize>();
        let summary = Summary {
            files: draft.files.len(),
            scopes: rules.scopes().len(),
            formats: draft.formats.len(),
            variables: rules.vars().len() - channels.len(),
            channels: channels.len(),
            clocks: clocks.len(),
            stocks: stocks.len(),
            functions: draft.functions.len(),
            kinds: kinds.list.len(),
            objects: objects.len(),
            modifiers,
            skipped_tokens: draft.skipped.values().map(Vec::len).sum(),
        };
        let catalog = Arc::new(self.catalog.take().unwrap_or_else(|| Catalog::new(rules.clone())));
        Ok(Ruleset {
            catalog,
            rules,
            kinds: kinds.list,
            kind_names: kinds.names,
            objects,
            object_index: index,
            global_mods,
            channels,
            stocks,
            clocks,
            var_origins,
            skipped: draft.skipped,
            files: draft.files,
            summary,
            warnings: self.warnings,
            sections: draft.sections,
            later: Default::default(),
        })
    }

    /// Scopes, parents first whatever the order they were written in.
    fn scopes(&mut self, draft: &Draft, b: &mut RulesBuilder) {
        let mut pending: Vec<_> = draft.scopes.iter().collect();
        while !pending.is_empty() {
            let before = pending.len();
            let mut later = Vec::new();
            for sc in pending {
                if b.scope(&sc.parent.text).is_ok() {
                    if let Err(e) = b.add_scope(&sc.name.text, &sc.parent.text) {
                        self.errors.push(Diagnostic::at(codes::BAD_SCOPE, &sc.name, e.message));
                    }
                } else {
                    later.push(sc);
                }
            }
            if later.len() == before {
                for sc in later {
                    self.errors.push(Diagnostic::at(
                        codes::UNKNOWN_SCOPE,
                        &sc.parent,
                        format!("scope `{}`: its parent `{}` is not defined", sc.name, sc.parent),
                    ));
                }
                break;
            }
            pending = later;
        }
    }

    /// Formats, with the enumeration values data files add.
    fn formats(&mut self, draft: &Draft, b: &mut RulesBuilder) {
        for f in &draft.formats {
            let t: Arc<dyn formula::FormatType> = match &f.kind {
                FormatKind::OrderedPair => Arc::new(OrderedPair),
                FormatKind::Dice => Arc::new(Dice),
                FormatKind::Enumeration(values) => {
                    let mut all: Vec<Arc<str>> = Vec::new();
                    let extra = draft
                        .enum_values
                        .iter()
                        .filter(|(n, _)| n.eq_ignore_ascii_case(&f.name.text))
                        .map(|(_, v)| v);
                    for v in values.iter().chain(extra) {
                        if !all.iter().any(|a| a.eq_ignore_ascii_case(&v.text)) {
                            all.push(v.text.clone());
                        }
                    }
                    Arc::new(Enumeration::new(&f.name.text.to_ascii_uppercase(), all))
                }
            };
            if let Err(e) = b.register_format(t) {
                self.errors.push(Diagnostic::at(codes::BAD_FORMAT, &f.name, e.message));
            }
        }
        for (name, v) in &draft.enum_values {
            if !draft.formats.iter().any(|f| f.name.text.eq_ignore_ascii_case(name)) {
                self.errors.push(Diagnostic::at(
                    codes::UNKNOWN_FORMAT,
                    v,
                    format!("`{}` is a value of format `{name}`, which is not defined", v.text),
                ));
            }
        }
    }

    /// Where each format starts.
    fn defaults(&mut self, draft: &Draft, b: &mut RulesBuilder) {
        for (format, value) in &draft.defaults {
            let f = match b.formats().parse(&format.text) {
                Ok(f) => f,
                Err(m) => {
                    self.errors.push(Diagnostic::at(codes::UNKNOWN_FORMAT, format, m));
                    continue;
                }
            };
            match Value::parse_literal(&f, &value.text) {
                Ok(v) => {
                    if let Err(e) = b.set_default(f, v) {
                        self.errors.push(Diagnostic::at(codes::BAD_FORMAT, value, e.message));
                    }
                }
                Err(m) => self.errors.push(Diagnostic::at(
                    codes::BAD_FORMAT,
                    value,
                    format!("default for {format}: {m}"),
                )),
            }
        }
    }

    /// User functions.
    fn functions(&mut self, draft: &Draft, b: &mut RulesBuilder) {
        for (name, body) in &draft.functions {
            let Err(e) = b.define_function(&name.text, &body.text) else { continue };
            let d = match e.formula.as_deref() {
                Some((fe, _)) if fe.code != ErrorCode::BadFunctionDefinition => {
                    formula_diag(codes::BAD_FUNCTION, body, fe, &format!("function `{}`", name.text))
                }
                Some((fe, _)) => Diagnostic::at(codes::BAD_FUNCTION, name, fe.message.clone()),
                None => Diagnostic::at(codes::BAD_FUNCTION, name, e.message),
            };
            self.errors.push(d);
        }
    }

    /// Declares the aggregates (`count(SCOPE, WHERE)`, …) that the ruleset's formulas call, and
    /// the references to other instances' variables (`@id.Var`) they read —
    /// its modifiers', its stocks' bounds, and the strings of the sections a layer above reads
    /// (its rules' guards and amounts) — before the rules are built (see
    /// [`RulesBuilder::declare_aggregates`]). Returns where each is first written, by its
    /// canonical text in lower case.
    fn aggregates(&mut self, draft: &Draft, b: &mut RulesBuilder) -> HashMap<String, Text> {
        let mut texts: Vec<&Text> = Vec::new();
        let mods = draft.global_mods.iter().chain(draft.objects.iter().flat_map(|o| {
            o.modify.iter().chain(o.other.iter().map(|x| &x.m)).chain(o.parts.iter().map(|(_, m)| m))
        }));
        // A STRING (or data-format) value is a literal unless `=` marks it a formula: `"@x"` is
        // text, not a reference. (A name declared with a formula format anywhere is read.)
        let formula_format = |f: &str| {
            let f = f.trim().to_ascii_uppercase();
            f == "NUMBER" || f == "BOOLEAN" || f.starts_with("ARRAY")
        };
        let mut literal_only: HashMap<String, bool> = HashMap::new();
        for v in &draft.variables {
            let only = literal_only.entry(v.name.text.to_ascii_lowercase()).or_insert(true);
            *only &= !formula_format(&v.format.text);
        }
        for m in mods {
            let literal = literal_only.get(&m.var.text.to_ascii_lowercase()).copied().unwrap_or(false)
                && !m.value.text.starts_with('=');
            if !literal {
                texts.push(&m.value);
            }
            texts.extend(&m.condition);
        }
        for v in &draft.variables {
            if let Some(stock) = &v.stock {
                texts.extend(stock.min.iter().chain(&stock.max));
            }
        }
        fn strings<'a>(raw: &'a Raw, out: &mut Vec<&'a Text>) {
            match &raw.value {
                RawValue::String(t) => out.push(t),
                RawValue::Array(items) => items.iter().for_each(|r| strings(r, out)),
                RawValue::Table(entries) => entries.iter().for_each(|(_, r)| strings(r, out)),
                RawValue::Number(_) | RawValue::Boolean(_) => {}
            }
        }
        // A section's strings are not all formulas (a question's prompt, a rule's name): one
        // that does not declare is left to the layer that reads it, which reports it where it
        // is a formula.
        let own = texts.len();
        for (_, raw) in &draft.sections {
            strings(raw, &mut texts);
        }
        let mut first: HashMap<String, Text> = HashMap::new();
        for (i, t) in texts.into_iter().enumerate() {
            // Most text has no aggregate and no reference: only what could hold one is parsed.
            if !b.may_declare(&t.text) {
                continue;
            }
            if t.text.to_ascii_lowercase().contains("getother(") {
                self.get_other_objects(draft, t);
            }
            let before = b.aggregate_count();
            match b.declare_aggregates(&t.text) {
                Ok(()) => {
                    for text in b.aggregate_texts().skip(before) {
                        first.entry(text.to_ascii_lowercase()).or_insert_with(|| t.clone());
                    }
                }
                Err(_) if i >= own => {}
                Err(e) => {
                    let code = match e.code {
                        solver::Code::BadReference => codes::BAD_REFERENCE,
                        _ => codes::BAD_AGGREGATE,
                    };
                    self.errors.push(Diagnostic::at(code, t, e.message));
                }
            }
        }
        first
    }

    /// Checks each `getOther("SCOPE", "key", Var)` in formula `t` names an object of a kind
    /// whose instances are of SCOPE (the solver checks the rest of the call).
    fn get_other_objects(&mut self, draft: &Draft, t: &Text) {
        use formula::ast::{Expr, ExprKind};
        fn walk<'e>(e: &'e Expr, out: &mut Vec<(&'e str, &'e Expr)>) {
            match &e.kind {
                ExprKind::Call { name, args, .. } => {
                    if name.eq_ignore_ascii_case("getOther")
                        && let [scope, key, _] = &args[..]
                        && let ExprKind::Str(scope) = &scope.kind
                        && matches!(key.kind, ExprKind::Str(_))
                    {
                        out.push((scope, key));
                    }
                    args.iter().for_each(|a| walk(a, out));
                }
                ExprKind::Unary { expr, .. } => walk(expr, out),
                ExprKind::Binary { lhs, rhs, .. } => {
                    walk(lhs, out);
                    walk(rhs, out);
                }
                ExprKind::Index { index, .. } => walk(index, out),
                ExprKind::Number(_) | ExprKind::Str(_) | ExprKind::Var(_) => {}
            }
        }
        // A STRING modifier's formula is marked `=`: offsets count from after it.
        let (text, skip) = match t.text.strip_prefix('=') {
            Some(f) if !f.starts_with('=') => (f, 1),
            _ => (&*t.text, 0),
        };
        let Ok(e) = formula::parse(text, &formula::Limits::default()) else { return };
        let mut calls = Vec::new();
        walk(&e, &mut calls);
        for (scope, key) in calls {
            let ExprKind::Str(k) = &key.kind else { continue };
            let kinds: Vec<&str> = draft
                .kinds
                .iter()
                .filter(|kd| kd.scope.text.eq_ignore_ascii_case(scope))
                .map(|kd| &*kd.name.text)
                .collect();
            let of_scope =
                |o: &&crate::draft::ObjectDraft| kinds.iter().any(|kd| o.kind.text.eq_ignore_ascii_case(kd));
            if kinds.is_empty() || draft.objects.iter().filter(of_scope).any(|o| *o.key.text == **k) {
                // A scope no kind has is the solver's to report (or an instance added by id).
                continue;
            }
            let at = t.slice(key.span.start as usize + skip, key.span.end as usize + skip);
            let keys = draft.objects.iter().filter(of_scope).map(|o| &*o.key.text);
            let e = Diagnostic::at(
                codes::UNKNOWN_OBJECT,
                &at,
                format!("getOther: there is no object `{k}` of {} (the object is its key, as its instances are added)", kinds.join(" or ")),
            )
            .suggest(k, keys);
            self.errors.push(e);
        }
    }

    /// Aggregates whose `EXPR` or `WHERE` did not compile, each reported where the ruleset
    /// first writes it (`first`, from [`Compiler::aggregates`]).
    fn aggregate_errors(&mut self, rules: &Rules, first: &HashMap<String, Text>) {
        for (text, e) in rules.aggregate_errors() {
            if let Some(at) = first.get(&text.to_ascii_lowercase()) {
                self.errors.push(Diagnostic::at(codes::BAD_AGGREGATE, at, e.message.clone()));
            }
        }
    }

    /// Variables and channels.
    fn variables(&mut self, draft: &Draft, b: &mut RulesBuilder) -> Declared {
        let mut declared = Declared { origins: Vec::new(), channels: HashSet::new() };
        let ruleset_order = draft.order.as_ref().and_then(|text| Some((self.order_named(text)?, text)));
        for v in &draft.variables {
            let format = match b.formats().parse(&v.format.text) {
                Ok(f) => f,
                Err(m) => {
                    self.errors.push(Diagnostic::at(codes::UNKNOWN_FORMAT, &v.format, m));
                    continue;
                }
            };
            if b.scope(&v.scope.text).is_err() {
                self.errors.push(Diagnostic::at(
                    codes::UNKNOWN_SCOPE,
                    &v.scope,
                    format!("variable `{}`: unknown scope `{}`", v.name, v.scope),
                ));
                continue;
            }
            match b.declare(&v.name.text, &v.scope.text, format, false) {
                Ok(id) => {
                    self.order(v, ruleset_order, id, b);
                    if let Some(holds) = &v.holds {
                        match b.set_holds(id, &holds.text) {
                            Ok(()) => {}
                            Err(e) if e.code == solver::Code::UnknownScope => {
                                self.errors.push(Diagnostic::at(
                                    codes::UNKNOWN_SCOPE,
                                    holds,
                                    format!("variable `{}`: {}", v.name, e.message),
                                ))
                            }
                            Err(e) => {
                                self.errors.push(Diagnostic::at(codes::BAD_REFERENCE, holds, e.message))
                            }
                        }
                    }
                    let origins = &mut declared.origins;
                    if origins.len() <= id.0 as usize {
                        origins.resize(id.0 as usize + 1, None);
                    }
                    origins[id.0 as usize].get_or_insert_with(|| v.name.at.clone());
                    if v.channel {
                        declared.channels.insert(id.0);
                    }
                }
                Err(e) => self.errors.push(Diagnostic::at(codes::VARIABLE_CONFLICT, &v.name, e.message)),
            }
        }
        declared
    }

    /// The stocks (`[stocks]`): each one's bounds compiled in its scope as NUMBER formulas.
    fn stocks(&mut self, draft: &Draft, rules: &Rules) -> Map<VarDefId, Stock> {
        let mut stocks = Map::default();
        for v in &draft.variables {
            let Some(decl) = &v.stock else { continue };
            // Declared above (an error there was reported there).
            let Some(def) = rules.scope(&v.scope.text).ok().and_then(|s| rules.resolve(s, &v.name.text))
            else {
                continue;
            };
            let scope = rules.var(def).scope;
            let mut bound = |text: &Option<Text>, what: &str| match text {
                None => Some(None),
                Some(t) => match rules.compile(&t.text, scope, None, Some(&Format::Number)) {
                    Ok(f) => Some(Some(Instruction::Compiled(f))),
                    Err(e) => {
                        self.errors.push(formula_diag(codes::FORMULA, t, &e, what));
                        None
                    }
                },
            };
            let (min, max) = (bound(&decl.min, "a stock's minimum"), bound(&decl.max, "a stock's maximum"));
            let clamp = match decl.bounds.as_ref().map(|b| b.text.to_ascii_lowercase()) {
                None => Some(false),
                Some(b) if b == "reject" => Some(false),
                Some(b) if b == "clamp" => Some(true),
                Some(_) => {
                    let b = decl.bounds.as_ref().map_or_else(|| v.name.clone(), Clone::clone);
                    let msg = format!("stock `{}`: bounds `{}` (expected clamp or reject)", v.name, b.text);
                    self.errors.push(Diagnostic::at(codes::BAD_BOUNDS, &b, msg));
                    None
                }
            };
            if let (Some(min), Some(max), Some(clamp)) = (min, max, clamp) {
                stocks.insert(def, Stock { min, max, clamp });
            }
        }
        stocks
    }

    /// The order named by `text`, or `None` with an error at it.
    fn order_named(&mut self, text: &Text) -> Option<Order> {
        let order = Order::named(&text.text);
        if order.is_none() {
            self.errors.push(Diagnostic::at(
                codes::BAD_ORDER,
                text,
                format!("unknown order `{}` (expected inherent or applied)", text.text),
            ));
        }
        order
    }

    /// Sets the order variable `id` (declared by `v`) applies its modifiers in: its own, else
    /// the ruleset's (`ruleset`, read once); PCGen's (inherent) when neither says.
    fn order(&mut self, v: &VarDecl, ruleset: Option<(Order, &Text)>, id: VarDefId, b: &mut RulesBuilder) {
        let (order, text) = match &v.order {
            Some(text) => match self.order_named(text) {
                Some(order) => (order, text),
                None => return,
            },
            None => match ruleset {
                Some(o) => o,
                None => return,
            },
        };
        if let Err(e) = b.set_order(id, order) {
            self.errors.push(Diagnostic::at(codes::VARIABLE_CONFLICT, text, e.message));
        }
    }

    /// The data tables and `lookup(TABLE, VALUE, COLUMN)` over them.
    fn lookup_function(&mut self, draft: &Draft, b: &mut RulesBuilder) {
        let tables =
            crate::tables::Tables::compile(&draft.tables, |f| b.formats().parse(f), &mut self.errors);
        let lookup = crate::tables::Lookup { tables: Arc::new(tables) };
        self.external(draft, b, Arc::new(lookup), "reads data tables");
    }

    /// The objects' facts, and `getFact(KIND, OBJECT, "Fact")` and `listAll(KIND[, VIEW])`
    /// over them.
    fn fact_functions(&mut self, draft: &Draft, b: &mut RulesBuilder) {
        let facts = crate::facts::Facts::compile(draft, |f| b.formats().parse(f), &mut self.errors);
        let facts = Arc::new(facts);
        self.external(
            draft,
            b,
            Arc::new(crate::facts::GetFact { facts: facts.clone() }),
            "reads objects' facts",
        );
        self.external(draft, b, Arc::new(crate::facts::ListAll { facts }), "lists a kind's objects");
    }

    /// `input("CHANNEL")`, which reads the channels declared.
    fn input_function(&mut self, draft: &Draft, b: &mut RulesBuilder, channels: HashSet<u32>) {
        self.external(draft, b, Arc::new(Input { channels }), "reads channels");
    }

    /// Adds a function of sheetd's own to the library; the data defining a function of the same
    /// name is an error at its definition (`does` says what sheetd's does).
    fn external(&mut self, draft: &Draft, b: &mut RulesBuilder, f: Arc<dyn ExternalFunction>, does: &str) {
        let name = f.name().to_owned();
        let Err(e) = b.library_mut().add_external(f) else { return };
        // Only possible when the data defines its own function of that name.
        let at = draft.functions.iter().find(|(n, _)| n.text.eq_ignore_ascii_case(&name));
        self.errors.push(match at {
            Some((n, _)) => Diagnostic::at(
                codes::BAD_FUNCTION,
                n,
                format!("`{name}` {does} and cannot be redefined ({})", e.message),
            ),
            None => Diagnostic::nowhere(codes::BAD_FUNCTION, e.message),
        });
    }

    /// Object kinds.
    fn kinds(&mut self, draft: &Draft, b: &RulesBuilder) -> Kinds {
        let mut kinds = Kinds { list: Vec::new(), names: Map::default() };
        for k in &draft.kinds {
            let key = k.name.text.to_ascii_uppercase();
            if kinds.names.contains_key(&key) {
                let message = format!("object kind `{}` is defined twice", k.name);
                self.errors.push(Diagnostic::at(codes::BAD_SCOPE, &k.name, message));
                continue;
            }
            let Ok(scope) = b.scope(&k.scope.text) else {
                let message = format!("object kind `{}`: unknown scope `{}`", k.name, k.scope);
                self.errors.push(Diagnostic::at(codes::UNKNOWN_SCOPE, &k.scope, message));
                continue;
            };
            let parts = k.parts.as_ref().and_then(|p| match b.scope(&p.text) {
                Ok(s) => Some(s),
                Err(_) => {
                    let message = format!("object kind `{}`: unknown part scope `{}`", k.name, p);
                    self.errors.push(Diagnostic::at(codes::UNKNOWN_SCOPE, p, message));
                    None
                }
            });
            kinds.names.insert(key, KindId(kinds.list.len() as u32));
            kinds.list.push(Kind {
                name: k.name.text.clone(),
                scope,
                presence: k.presence,
                attach: k.attach,
                parts,
                at: k.name.at.clone(),
            });
        }
        kinds
    }

    /// Each kind's part scope must be a child of its scope.
    fn part_scopes(&mut self, draft: &Draft, kinds: &Kinds, rules: &Rules) {
        for (k, kd) in draft.kinds.iter().zip(&kinds.list) {
            let Some(p) = kd.parts else { continue };
            if rules.scope_def(p).parent != Some(kd.scope) {
                self.errors.push(Diagnostic::at(
                    codes::BAD_SCOPE,
                    k.parts.as_ref().unwrap_or(&k.scope),
                    format!(
                        "object kind `{}`: its part scope {} must be a child of its scope {}",
                        kd.name,
                        rules.scope_def(p).name,
                        rules.scope_def(kd.scope).name
                    ),
                ));
            }
        }
    }

    /// Every object by (kind, lower-case key) — GRANT refers to objects defined anywhere — and
    /// each object's kind (`None`: unknown, reported). A second definition in the same category
    /// is a warning; the first is kept.
    fn index_objects(&mut self, draft: &Draft, kinds: &Kinds) -> (ObjectIndex, Vec<Option<KindId>>) {
        let mut index: ObjectIndex = vec![Map::default(); kinds.list.len()];
        let mut object_kinds = Vec::with_capacity(draft.objects.len());
        let category = |o: &ObjectDraft| o.category.as_ref().map(|c| c.text.to_lowercase());
        for (i, o) in draft.objects.iter().enumerate() {
            let kind = kinds.names.get(&o.kind.text.to_ascii_uppercase()).copied();
            object_kinds.push(kind);
            let Some(k) = kind else {
                let message = format!("object `{}`: unknown object kind `{}`", o.key, o.kind);
                let names = kinds.list.iter().map(|k| &*k.name);
                self.errors
                    .push(Diagnostic::at(codes::UNKNOWN_KIND, &o.kind, message).suggest(&o.kind.text, names));
                continue;
            };
            let Some(by_key) = index.get_mut(k.0 as usize) else { continue };
            let ids = by_key.entry(o.key.text.to_lowercase().into_boxed_str()).or_default();
            match ids.iter().find(|x| category(&draft.objects[x.0 as usize]) == category(o)) {
                None => ids.push(ObjectId(i as u32)),
                Some(first) => {
                    // PCGen data has a few of these; the first definition is kept.
                    let first = &draft.objects[first.0 as usize];
                    self.warnings.push(Diagnostic::at(
                        codes::DUPLICATE_OBJECT,
                        &o.key,
                        format!(
                            "{} `{}` is already defined at {}; this definition is ignored",
                            kinds.list[k.0 as usize].name, o.key, first.key.at
                        ),
                    ));
                }
            }
        }
        (index, object_kinds)
    }

    /// One object: its modifiers, MODIFYOTHERs, grants and parts. An object of an unknown kind
    /// keeps its place (so ids stay aligned) with nothing compiled.
    fn object(&mut self, t: &Tables<'_>, o: &ObjectDraft, kind: Option<KindId>) -> Object {
        let (kind_id, scope, kind_name) = match kind {
            Some(k) => (k, t.kinds.list[k.0 as usize].scope, t.kinds.list[k.0 as usize].name.clone()),
            None => (KindId(u32::MAX), t.rules.global(), o.kind.text.clone()),
        };
        let label = format!("{kind_name} {}", o.key.text);
        let modify = match kind {
            Some(_) => o.modify.iter().filter_map(|m| self.modifier(t.rules, scope, m, &label)).collect(),
            None => Vec::new(),
        };
        let other = self.modify_other(t, o, &label);
        let grants = self.grants(t, o);
        let (parts, part_count) = self.parts(t, o, kind, &label);
        Object {
            kind: kind_id,
            key: o.key.text.clone(),
            folded_key: Arc::from(o.key.text.to_lowercase()),
            name: o.name.text.clone(),
            category: o.category.as_ref().map(|c| c.text.clone()),
            groups: o.groups.iter().map(|g| Arc::from(g.text.to_lowercase())).collect(),
            modify,
            other,
            grants,
            parts,
            part_count,
            at: o.at.clone(),
            label: Arc::from(label),
        }
    }

    /// An object's MODIFYOTHERs, each compiled in its target scope (as PCGen reads them).
    fn modify_other(&mut self, t: &Tables<'_>, o: &ObjectDraft, label: &str) -> Vec<OtherMod> {
        let mut other = Vec::new();
        for od in &o.other {
            let Ok(target) = t.rules.scope(&od.scope.text) else {
                let message = format!("unknown scope `{}`", od.scope);
                self.errors.push(Diagnostic::at(codes::UNKNOWN_SCOPE, &od.scope, message));
                continue;
            };
            let select = match &od.select {
                Selector::All => Select::All,
                Selector::Key(k) => Select::Key(Arc::from(k.text.to_lowercase())),
                Selector::Group(g) => Select::Group(Arc::from(g.text.to_lowercase())),
            };
            if let Some(m) = self.modifier(t.rules, target, &od.m, label) {
                other.push(OtherMod { scope: target, select, m });
            }
        }
        other
    }

    /// The dynamic objects an object grants.
    fn grants(&mut self, t: &Tables<'_>, o: &ObjectDraft) -> Vec<ObjectId> {
        let mut grants = Vec::new();
        for g in &o.grants {
            let Some(&gk) = t.kinds.names.get(&g.kind.text.to_ascii_uppercase()) else {
                let message = format!("GRANT: unknown object kind `{}`", g.kind);
                let names = t.kinds.list.iter().map(|k| &*k.name);
                self.errors
                    .push(Diagnostic::at(codes::UNKNOWN_KIND, &g.kind, message).suggest(&g.kind.text, names));
                continue;
            };
            let kind = &t.kinds.list[gk.0 as usize];
            match t.index.get(gk.0 as usize).and_then(|m| m.get(g.key.text.to_lowercase().as_str())) {
                Some(ids) if kind.presence == Presence::Granted => grants.push(ids[0]),
                Some(_) => self.errors.push(Diagnostic::at(
                    codes::UNKNOWN_OBJECT,
                    &g.kind,
                    format!("GRANT: {} objects are not granted (only dynamic objects are)", kind.name),
                )),
                None => {
                    let keys = t.index.get(gk.0 as usize).into_iter().flat_map(|m| m.values());
                    let keys = keys.filter_map(|ids| t.objects.get(ids[0].0 as usize)).map(|o| &*o.key.text);
                    self.errors.push(
                        Diagnostic::at(
                            codes::UNKNOWN_OBJECT,
                            &g.key,
                            format!("GRANT: there is no {} `{}`", kind.name, g.key),
                        )
                        .suggest(&g.key.text, keys),
                    )
                }
            }
        }
        grants
    }

    /// An object's part modifiers (by part number) and how many parts it has: at least one for
    /// a kind with parts.
    fn parts(
        &mut self,
        t: &Tables<'_>,
        o: &ObjectDraft,
        kind: Option<KindId>,
        label: &str,
    ) -> (Vec<(u32, ModTemplate)>, u32) {
        let Some(kind) = kind.map(|k| &t.kinds.list[k.0 as usize]) else { return (Vec::new(), o.part_count) };
        let Some(part_scope) = kind.parts else {
            for (_, m) in &o.parts {
                let message = format!("{} objects have no parts", kind.name);
                self.errors.push(Diagnostic::at(codes::BAD_PART, &m.var, message));
            }
            return (Vec::new(), o.part_count);
        };
        let mut parts = Vec::new();
        let mut count = o.part_count.max(1);
        for (n, m) in &o.parts {
            if let Some(t) = self.modifier(t.rules, part_scope, m, label) {
                parts.push((*n, t));
            }
            count = count.max(*n);
        }
        (parts, count)
    }

    /// Checks one modifier as seen from `scope`; reports and returns `None` when it is wrong.
    fn modifier(&mut self, rules: &Rules, scope: ScopeId, m: &ModDraft, label: &str) -> Option<ModTemplate> {
        let Some(def) = rules.resolve(scope, &m.var.text) else {
            self.errors.push(unknown_variable(rules, scope, &m.var));
            return None;
        };
        let var = rules.var(def);
        let kind = match ModKind::parse(&m.kind.text, &var.format) {
            Ok(k) => k,
            Err(msg) => {
                self.errors.push(bad_modifier_type(&m.kind, &var.name, msg));
                return None;
            }
        };
        let priority = match &m.priority {
            None => 0,
            Some(p) => match p.text.parse::<u32>() {
                Ok(n) if p.text.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => {
                    self.errors.push(Diagnostic::at(
                        codes::BAD_PRIORITY,
                        p,
                        format!("PRIORITY must be a whole number from 0 to {}, not `{}`", u32::MAX, p.text),
                    ));
                    return None;
                }
            },
        };
        let value_format = kind.value_format(&var.format);
        let value = self.value(rules, scope, &m.value, &var.format, &value_format)?;
        let condition = match &m.condition {
            None => None,
            Some(c) => match rules.compile(&c.text, scope, Some(&var.format), Some(&Format::Boolean)) {
                Ok(f) => Some(Instruction::Compiled(f)),
                Err(e) => {
                    self.errors.push(formula_diag(codes::FORMULA, c, &e, "condition"));
                    return None;
                }
            },
        };
        let source: Arc<str> = match m.at.line() {
            0 => Arc::from(label),
            line => Arc::from(format!("{label} ({}:{line})", m.at.file())),
        };
        // Checked once more, as the solver checks what it links: into the catalog every
        // character links the template from.
        let spec = TemplateSpec {
            var: def,
            kind,
            value: value.clone(),
            priority,
            source: source.clone(),
            condition: condition.clone(),
            scope,
        };
        let template = self.catalogued(spec, &source, &m.var)?;
        Some(ModTemplate {
            template,
            var: var.name.clone(),
            def,
            kind,
            value,
            priority,
            condition,
            at: m.at.clone(),
            source,
        })
    }

    /// Template `spec` added to the catalog (checked as the solver checks what it links); an
    /// error is reported at `at`.
    fn catalogued(&mut self, spec: TemplateSpec, source: &str, at: &Text) -> Option<solver::TemplateId> {
        match self.catalog.as_mut().map(|c| c.add(source, spec)) {
            Some(Ok(t)) => Some(t),
            Some(Err(e)) => {
                let code = match e.code {
                    solver::Code::Formula => codes::FORMULA,
                    solver::Code::BadModifierType | solver::Code::Locked => codes::BAD_MODIFIER_TYPE,
                    _ => codes::BAD_VALUE,
                };
                self.errors.push(Diagnostic::at(code, at, e.message));
                None
            }
            // `run` makes the catalog before it compiles any modifier: this is not reached.
            None => {
                self.errors.push(Diagnostic::at(codes::BAD_VALUE, at, "no catalog to check the modifier in"));
                None
            }
        }
    }

    /// A modifier value: a literal for formats without formulas, else a compiled formula (the
    /// solver's rule, [`Rules::instruction`]).
    fn value(
        &mut self,
        rules: &Rules,
        scope: ScopeId,
        text: &Text,
        input: &Format,
        expected: &Format,
    ) -> Option<Instruction> {
        match rules.instruction(&text.text, scope, input, expected) {
            Ok(i @ Instruction::Literal(..)) => {
                // A text that also reads as a formula of the format (`"Level " + text(Level)`,
                // or a variable's name) is most likely meant as one: taken as the text it is, but
                // said.
                if matches!(expected, Format::String | Format::Custom(_) | Format::Array(_))
                    && !text.text.starts_with('=')
                    && rules.compile(&text.text, scope, Some(input), Some(expected)).is_ok()
                {
                    self.warnings.push(Diagnostic::at(
                        codes::LITERAL_LIKE_FORMULA,
                        text,
                        format!(
                            "`{}` is taken as the text it is, but reads as a formula; write `={}` to make it one",
                            text.text, text.text
                        ),
                    ));
                }
                Some(i)
            }
            Ok(i) => Some(i),
            Err(InstructionError::Literal(m)) => {
                self.errors.push(Diagnostic::at(codes::BAD_VALUE, text, m));
                None
            }
            Err(InstructionError::Formula(e)) => {
                self.errors.push(formula_diag(codes::FORMULA, text, &e, "formula"));
                None
            }
        }
    }
}

/// A modifier's variable that is not visible from `scope`, with the nearest visible name.
fn unknown_variable(rules: &Rules, scope: ScopeId, var: &Text) -> Diagnostic {
    let mut names = Vec::new();
    rules.visible_names(scope, &mut |n| names.push(n.to_owned()));
    let scope_name = &rules.scope_def(scope).name;
    Diagnostic::at(
        codes::UNKNOWN_VARIABLE,
        var,
        format!("variable `{var}` is not defined in scope {scope_name} or its ancestors"),
    )
    .suggest(&var.text, names.iter().map(String::as_str))
}

/// A modifier type that is not one, or does not fit variable `var`'s format. A misspelled
/// type gets a hint; one that does not fit already lists the types that do.
fn bad_modifier_type(kind: &Text, var: &str, msg: String) -> Diagnostic {
    let d = Diagnostic::at(codes::BAD_MODIFIER_TYPE, kind, format!("modifier on `{var}`: {msg}"));
    if ModKind::named(&kind.text).is_err() {
        d.suggest(&kind.text, ["SET", "MULTIPLY", "DIVIDE", "ADD", "MAX", "MIN", "APPEND"])
    } else {
        d
    }
}
