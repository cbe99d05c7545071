//! Tests of the whole pipeline: tables of formula → value and formula → error, the extension
//! points, interning, property tests and diagnostic snapshots.

use super::*;
use proptest::prelude::*;
use rust_decimal::Decimal;
use std::str::FromStr;

/// A symbol table and context over a list of (name, format, value).
#[derive(Default)]
struct Env {
    vars: Vec<(String, Format, Value)>,
}

impl Env {
    fn with(mut self, name: &str, format: Format, value: Value) -> Self {
        self.vars.push((name.to_owned(), format, value));
        self
    }
    fn num(self, name: &str, v: &str) -> Self {
        self.with(name, Format::Number, Value::Number(d(v)))
    }
    fn boolean(self, name: &str, v: bool) -> Self {
        self.with(name, Format::Boolean, Value::Boolean(v))
    }
    fn array(self, name: &str, items: &[i64]) -> Self {
        let values: Vec<Value> = items.iter().map(|i| Value::Number(Decimal::from(*i))).collect();
        self.with(name, Format::array(Format::Number), Value::Array(values.into()))
    }
}

impl Symbols for Env {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        self.vars
            .iter()
            .position(|(n, _, _)| n.eq_ignore_ascii_case(name))
            .map(|i| (VarId(i as u32), self.vars[i].1.clone()))
    }
    fn scope_description(&self) -> String {
        "scope TEST".to_owned()
    }
}

impl EvalContext for Env {
    fn value(&self, id: VarId) -> Option<Value> {
        self.vars.get(id.0 as usize).map(|(_, _, v)| v.clone())
    }
}

fn d(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

fn library() -> Library {
    let mut lib = Library::new();
    lib.define("d20Mod", "floor((arg(0)-10)/2)").unwrap();
    lib.define("embed", "floor((arg(0)-arg(1))/2)").unwrap();
    lib.define("pick", "if(arg(0), arg(1), arg(2))").unwrap();
    lib.define("scoreMod", "d20Mod(Score)").unwrap();
    lib.define("selfish", "selfish(arg(0))").unwrap();
    lib.define("ping", "pong(arg(0))").unwrap();
    lib.define("pong", "ping(arg(0))").unwrap();
    lib.define("bad", "arg(0) + \"x\"").unwrap();
    lib
}

fn env() -> Env {
    Env::default()
        .num("a", "4")
        .num("b", "1")
        .num("Score", "14")
        .num("My Var", "2.5")
        .num("CL=Special Fighter", "3")
        .boolean("Flag", true)
        .boolean("Off", false)
        .with("Name", Format::String, Value::String("Valeros".into()))
        .array("arr", &[1, 2, 3, 4, 5, 6, 7])
        .array("empty", &[])
}

fn run_with(text: &str, env: &Env, input: Option<&Value>) -> Result<Value, FormulaError> {
    let input_format = input.map(|v| match v {
        Value::Number(_) => Format::Number,
        Value::Boolean(_) => Format::Boolean,
        _ => Format::String,
    });
    let mut check = CheckEnv::new(env);
    if let Some(f) = &input_format {
        check = check.with_input(f);
    }
    let f = Formula::compile(text, &library(), &check, &Limits::default())?;
    f.evaluate(env, input)
}

fn run(text: &str) -> Result<Value, FormulaError> {
    run_with(text, &env(), None)
}

fn show(v: &Value) -> String {
    v.to_string()
}

// long: a data table of formulas and their values.
#[test]
fn values_table() {
    let table: &[(&str, &str)] = &[
        // arithmetic, exact
        ("2+3", "5"),
        ("0.1+0.2", "0.3"),
        ("5/2", "2.5"),
        ("4/2", "2"),
        ("2/-8", "-0.25"),
        ("1/3", "0.3333333333333333333333333333"),
        ("-7%3", "-1"),
        ("2%-3", "2"),
        ("19%8%2", "1"),
        ("3.1%2", "1.1"),
        ("1-4-7", "-10"),
        ("2--3", "5"),
        ("2*-3", "-6"),
        ("1.3*0", "0"),
        ("-2^2", "-4"),
        ("(-2)^2", "4"),
        ("2^10", "1024"),
        ("2^(-2)", "0.25"),
        ("1.03^28", "2.287927675737261135491073502"),
        ("(2^3)^2", "64"),
        ("2^(3^2)", "512"),
        ("((4/(((3-1)))))", "2"),
        // comparisons and logic
        ("3==3.0", "true"),
        ("2!=3", "true"),
        ("2.0<2", "false"),
        ("2<=2.0", "true"),
        ("-2>=3.2", "false"),
        ("Flag && !Off", "true"),
        ("Flag || Off", "true"),
        ("(Flag || Off) && Off", "false"),
        ("Flag == (1 < 2)", "true"),
        ("Flag || 1/0 == 1", "true"),
        ("Off && 1/0 == 1", "false"),
        // functions
        ("abs(-5.3)", "5.3"),
        ("abs (-5.3 )", "5.3"),
        ("ceil(-5.3)", "-5"),
        ("ceil(6.3)", "7"),
        ("floor(-5.3)", "-6"),
        // floor and ceil of a division (fused into one integer division when whole)
        ("floor(7/2)", "3"),
        ("floor(-7/2)", "-4"),
        ("floor(7/-2)", "-4"),
        ("floor(-7/-2)", "3"),
        ("ceil(7/2)", "4"),
        ("ceil(-7/2)", "-3"),
        ("ceil(-8/2)", "-4"),
        ("floor((Score-10)/2)", "2"),
        ("floor((Score-11)/2)", "1"),
        ("ceil(Score/4)", "4"),
        ("floor(30/Score)", "2"),
        ("floor(-Score/4)", "-4"),
        ("ceil(-Score/4)", "-3"),
        ("floor(Score/(Score-15))", "-14"),
        ("ceil(Score/(Score-15))", "-14"),
        ("floor(Score/2.5)", "5"),
        ("floor(-9223372036854775808/-1)", "9223372036854775808"),
        ("round(2.5)", "3"),
        ("round(-2.5)", "-2"),
        ("round(-5.5)", "-5"),
        ("round(5.3)", "5"),
        ("min(4.6, 8, -3.3)", "-3.3"),
        ("MAX(4.6, a, -3.3)", "4.6"),
        ("max(-3.4,-5.3)", "-3.4"),
        ("if(a>=b, 5, 9)", "5"),
        ("if(a==b, 5, -9)", "-9"),
        ("if(Flag, 1, 1/0)", "1"),
        ("if(Off, 1/0, 2)", "2"),
        ("if(Flag, \"yes\", \"no\")", "yes"),
        ("length(arr)", "7"),
        ("length(empty)", "0"),
        ("isEmpty(empty)", "true"),
        ("isEmpty(arr)", "false"),
        ("slice(arr, 3)", "[4, 5, 6, 7]"),
        ("slice(arr, 1, 3)", "[2, 3]"),
        ("slice(arr, 5, 100)", "[6, 7]"),
        ("slice(arr, a, a+2)", "[5, 6]"),
        ("length(slice(arr, 6))", "1"),
        ("arr[0] + arr[6]", "8"),
        ("arr[a-1]", "4"),
        // variables: case-insensitive, PCGen names
        ("a*(b+a)", "20"),
        ("SCORE", "14"),
        ("My Var * 2", "5"),
        ("CL=Special Fighter+1", "4"),
        ("Name + \"!\"", "Valeros!"),
        ("Name == \"Valeros\"", "true"),
        // user functions
        ("d20Mod(14)", "2"),
        ("D20MOD(7)", "-2"),
        ("d20Mod(4+abs(-12))", "3"),
        ("d20Mod(embed(14,10))", "-4"),
        ("embed(14,d20Mod(14))", "6"),
        ("d20Mod(Score)", "2"),
        ("scoreMod()", "2"),
        ("pick(a > b, \"big\", \"small\")", "big"),
        ("pick(Off, 1, 2) + pick(Flag, 10, 20)", "12"),
    ];
    for (formula, expected) in table {
        match run(formula) {
            Ok(v) => assert_eq!(show(&v), *expected, "{formula}"),
            Err(e) => panic!("{formula}: unexpected error {}: {}", e.code, e.message),
        }
    }
}

#[test]
fn value_is_the_input() {
    let v = run_with("value() * 2", &env(), Some(&Value::Number(d("4")))).unwrap();
    assert_eq!(show(&v), "8");
    let v = run_with("if(4==value(),5,6)", &env(), Some(&Value::Number(d("1")))).unwrap();
    assert_eq!(show(&v), "6");
    let v = run_with("!value()", &env(), Some(&Value::Boolean(false))).unwrap();
    assert_eq!(show(&v), "true");
}

/// (formula, error code, the text the span covers).
#[test]
fn errors_table() {
    use ErrorCode::*;
    let table: &[(&str, ErrorCode, &str)] = &[
        ("2+", UnexpectedEnd, ""),
        ("1 ++ 2", UnexpectedToken, "+"),
        ("a||b&&Flag", AmbiguousPrecedence, "||b&&"),
        ("5+foo(5)", UnknownFunction, "foo"),
        ("a(1)", UnknownFunction, "a"),
        ("ab + 1", UnknownVariable, "ab"),
        ("true", UnknownVariable, "true"),
        ("d20Mod", UnknownVariable, "d20Mod"),
        ("abs(2, 3)", WrongArgumentCount, "abs(2, 3)"),
        ("max(2)", WrongArgumentCount, "max(2)"),
        ("if(2, 3)", WrongArgumentCount, "if(2, 3)"),
        ("value(1)", WrongArgumentCount, "value(1)"),
        ("d20Mod()", WrongArgumentCount, "d20Mod()"),
        ("d20Mod(1, 2)", WrongArgumentCount, "d20Mod(1, 2)"),
        ("if(2,4,5)", FormatMismatch, "2"),
        ("max(2,4<5)", FormatMismatch, "4<5"),
        ("if(2>0,4,5<6)", FormatMismatch, "4,5<6"),
        ("(4<5)+(5>6)", FormatMismatch, "4<5"),
        ("5^(9>8)", FormatMismatch, "9>8"),
        ("Flag + 1", FormatMismatch, "Flag"),
        ("!a", FormatMismatch, "a"),
        ("-Flag", FormatMismatch, "Flag"),
        ("a && Flag", FormatMismatch, "a"),
        ("a == Flag", FormatMismatch, "a == Flag"),
        ("Name + 1", FormatMismatch, "Name"),
        ("Name < \"b\"", FormatMismatch, "Name"),
        ("abs(\"ab\")", FormatMismatch, "\"ab\""),
        ("arr + 1", ArrayMisuse, "arr"),
        ("a[0]", ArrayMisuse, "a"),
        ("arr[Flag]", FormatMismatch, "Flag"),
        ("length(a)", FormatMismatch, "a"),
        ("isEmpty(\"ab\")", FormatMismatch, "\"ab\""),
        ("slice(arr)", WrongArgumentCount, "slice(arr)"),
        ("slice(arr, 2, 3, 4)", WrongArgumentCount, "slice(arr, 2, 3, 4)"),
        ("slice(arr, 3, 1)", InvalidArgument, "3, 1"),
        ("slice(arr, 3, 3)", InvalidArgument, "3, 3"),
        ("slice(arr, 3, 1.2)", InvalidArgument, "1.2"),
        ("slice(arr, -1)", InvalidArgument, "-1"),
        ("value()", NoInput, "value()"),
        ("arg(0)", BadArg, "arg(0)"),
        ("selfish(1)", RecursiveFunction, "selfish(1)"),
        ("ping(1)", RecursiveFunction, "ping(1)"),
        ("bad(1)", FormatMismatch, "bad(1)"),
        ("1/0", DivisionByZero, "/"),
        ("floor(Score/0)", DivisionByZero, "/"),
        ("ceil(Score/(Score-14))", DivisionByZero, "/"),
        ("1.3%0", DivisionByZero, "%"),
        ("a/(b-1)", DivisionByZero, "/"),
        ("0^(-1)", DivisionByZero, "^"),
        ("79228162514264337593543950335 + 1", Overflow, "+"),
        ("10^29", Overflow, "^"),
        ("(-2)^0.5", Domain, "^"),
        ("arr[7]", IndexOutOfRange, "arr[7]"),
        ("arr[0.5]", IndexOutOfRange, "arr[0.5]"),
        ("slice(arr, a - 5)", IndexOutOfRange, "slice(arr, a - 5)"),
        ("d20Mod(1/0)", DivisionByZero, "/"),
        ("embed(1, 2) / (a - 4)", DivisionByZero, "/"),
    ];
    for (formula, code, covered) in table {
        let e = match run(formula) {
            Ok(v) => panic!("{formula}: expected {code}, got value {v}"),
            Err(e) => e,
        };
        assert_eq!(e.code, *code, "{formula}: {}", e.message);
        assert_eq!(&formula[e.span.range()], *covered, "{formula}: span of {}", e.message);
        assert_eq!(e.stage(), code.stage());
    }
}

#[test]
fn messages_name_the_offender() {
    let msg = |f: &str| run(f).unwrap_err().message;
    assert_eq!(msg("ab + 1"), "unknown variable `ab` in scope TEST");
    assert_eq!(msg("abs(2, 3)"), "function `abs` takes 1 argument, but 2 were given");
    assert_eq!(msg("5+foo(5)"), "unknown function `foo`");
    assert_eq!(
        msg("Flag + 1"),
        "the left operand of `+` must be NUMBER (or two STRINGs), but this is BOOLEAN"
    );
    assert_eq!(msg("1/0"), "division by zero in 1 / 0");
    assert!(msg("bad(1)").starts_with("in user-defined function `bad` (body `arg(0) + \"x\"`), at `\"x\"`"));
}

#[test]
fn result_format_is_checked() {
    let e = env();
    let lib = library();
    let check = CheckEnv::new(&e).expecting(&Format::Number);
    let err = Formula::compile("a < b", &lib, &check, &Limits::default()).unwrap_err();
    assert_eq!(err.code, ErrorCode::WrongResultFormat);
    assert_eq!(err.span, Span::new(0, 5));
    assert!(Formula::compile("a + b", &lib, &check, &Limits::default()).is_ok());
}

#[test]
fn static_formulas_are_folded_and_reported() {
    let e = env();
    let lib = library();
    let compile = |t: &str| Formula::compile(t, &lib, &CheckEnv::new(&e), &Limits::default()).unwrap();
    let f = compile("d20Mod(4+abs(-12)) * 2");
    assert!(f.is_static());
    assert_eq!(f.static_value().map(show).as_deref(), Some("6"));
    assert_eq!(f.variables().len(), 0);
    let f = compile("d20Mod(Score)");
    assert!(!f.is_static());
    assert_eq!(f.static_value(), None);
    // `1/0` is static but fails: it is not folded, and evaluating reports the error.
    let f = compile("1/0");
    assert!(f.is_static());
    assert_eq!(f.static_value(), None);
    assert_eq!(f.evaluate(&e, None).unwrap_err().code, ErrorCode::DivisionByZero);
}

#[test]
fn variables_include_both_branches_of_if_and_function_bodies() {
    let e = env();
    let f = Formula::compile(
        "if(Flag, a, b + A) + scoreMod()",
        &library(),
        &CheckEnv::new(&e),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(f.variable_names().collect::<Vec<_>>(), ["Flag", "a", "b", "Score"]);
    assert_eq!(f.variables().collect::<Vec<_>>(), [VarId(5), VarId(0), VarId(1), VarId(2)]);
    assert_eq!(f.variable_formats()[0], Format::Boolean);
}

#[test]
fn one_formula_serves_many_contexts_and_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Formula>();
    assert_send_sync::<Compiler>();
    let e = env();
    let f = Arc::new(
        Formula::compile("d20Mod(Score)", &library(), &CheckEnv::new(&e), &Limits::default()).unwrap(),
    );
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let f = f.clone();
            std::thread::spawn(move || {
                let mut sheet = env();
                sheet.vars[2].2 = Value::Number(Decimal::from(10 + 2 * i));
                show(&f.evaluate(&sheet, None).unwrap())
            })
        })
        .collect();
    let got: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(got, ["0", "1", "2", "3"]);
}

/// Symbols with a cache key: a scope in which every name resolves the same way.
struct Scoped<'a>(&'a Env, u64);
impl Symbols for Scoped<'_> {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        self.0.resolve(name)
    }
    fn cache_key(&self) -> Option<u64> {
        Some(self.1)
    }
}

#[test]
fn identical_text_is_interned() {
    let e = env();
    let c = Compiler::new(Arc::new(library()));
    let s1 = Scoped(&e, 1);
    let f1 = c.compile("d20Mod(Score)", &CheckEnv::new(&s1)).unwrap();
    let f2 = c.compile("d20Mod(Score)", &CheckEnv::new(&s1)).unwrap();
    assert!(Arc::ptr_eq(&f1, &f2));
    // Another scope: its own instance, sharing the parsed tree.
    let s2 = Scoped(&e, 2);
    let f3 = c.compile("d20Mod(Score)", &CheckEnv::new(&s2)).unwrap();
    assert!(!Arc::ptr_eq(&f1, &f3));
    assert!(std::ptr::eq(f1.tree(), f3.tree()));
    // Another required format is another instance.
    let f4 = c.compile("d20Mod(Score)", &CheckEnv::new(&s1).expecting(&Format::Number)).unwrap();
    assert!(!Arc::ptr_eq(&f1, &f4));
    assert_eq!(c.interned(), 3);
    // Errors are not interned as formulas, and stay errors.
    assert!(c.compile("2+", &CheckEnv::new(&s1)).is_err());
    assert!(c.compile("2+", &CheckEnv::new(&s1)).is_err());
}

// ---- extension points: a custom format and an external function, defined outside the core ----

#[derive(Debug)]
struct OrderedPairType;
#[derive(Debug, PartialEq)]
struct Pair(Decimal, Decimal);

impl CustomData for Pair {
    fn literal(&self) -> String {
        format!("{},{}", canonical_decimal(self.0), canonical_decimal(self.1))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl FormatType for OrderedPairType {
    fn name(&self) -> &str {
        "ORDEREDPAIR"
    }
    fn parse_literal(&self, text: &str) -> Result<Arc<dyn CustomData>, String> {
        let (x, y) = text.split_once(',').ok_or("expected `x,y`")?;
        Ok(Arc::new(Pair(parse_decimal(x)?, parse_decimal(y)?)))
    }
    fn default_value(&self) -> Arc<dyn CustomData> {
        Arc::new(Pair(Decimal::ZERO, Decimal::ZERO))
    }
}

/// `input("NAME")`: reads the variable NAME, resolved at load.
struct Input;
#[derive(Debug)]
struct BoundInput(Format);

impl ExternalFunction for Input {
    fn name(&self) -> &str {
        "input"
    }
    fn bind(&self, site: &mut CallSite<'_>) -> Result<Arc<dyn BoundFunction>, FormulaError> {
        site.expect_arity(1)?;
        let arg = site.args()[0].clone();
        let Some(Value::String(channel)) = arg.constant else {
            return Err(FormulaError::new(
                ErrorCode::InvalidArgument,
                arg.span,
                "input() takes a string literal",
            ));
        };
        let (_, format) = site.resolve_variable(&channel, arg.span)?;
        Ok(Arc::new(BoundInput(format)))
    }
}

impl BoundFunction for BoundInput {
    fn format(&self) -> Format {
        self.0.clone()
    }
    fn eval(&self, args: &[Value], read: &dyn EvalContext) -> Result<Value, String> {
        let _ = args;
        // The variable was resolved at bind time; this test context finds it by position 0.
        read.value(VarId(0)).ok_or_else(|| "channel has no value".to_owned())
    }
}

#[test]
fn custom_formats_plug_in() {
    let mut registry = FormatRegistry::new();
    let pair = Format::Custom(registry.register(Arc::new(OrderedPairType)).unwrap());
    assert_eq!(registry.parse("orderedpair").unwrap(), pair);
    assert_eq!(registry.parse("ARRAY[ORDEREDPAIR]").unwrap(), Format::array(pair.clone()));
    assert!(registry.parse("DICE").unwrap_err().contains("unknown format `DICE`"));
    assert!(registry.register(Arc::new(OrderedPairType)).is_err());
    assert_eq!(pair.builtin_default().to_string(), "0,0");
    let face = Value::parse_literal(&pair, "5,5").unwrap();
    assert_eq!(face.to_string(), "5,5");
    assert!(Value::parse_literal(&pair, "5").is_err());
    let e = Env::default().with("Face", pair.clone(), face).with(
        "Other",
        pair.clone(),
        Value::parse_literal(&pair, "5.0, 5").unwrap(),
    );
    let lib = library();
    let check = CheckEnv::new(&e);
    let f = Formula::compile("if(Face == Other, Face, Other)", &lib, &check, &Limits::default()).unwrap();
    assert_eq!(f.format(), &pair);
    assert_eq!(f.evaluate(&e, None).unwrap().to_string(), "5,5");
    let err = Formula::compile("Face + 1", &lib, &check, &Limits::default()).unwrap_err();
    assert_eq!(err.code, ErrorCode::FormatMismatch);
}

#[test]
fn external_functions_plug_in_and_add_dependencies() {
    let mut lib = library();
    lib.add_external(Arc::new(Input)).unwrap();
    assert!(lib.add_external(Arc::new(Input)).is_err(), "no duplicate names");
    let e = Env::default().num("StatScore", "14");
    let check = CheckEnv::new(&e);
    let f = Formula::compile("d20Mod(INPUT(\"statscore\"))", &lib, &check, &Limits::default()).unwrap();
    assert!(!f.is_static());
    assert_eq!(f.variable_names().collect::<Vec<_>>(), ["statscore"]);
    assert_eq!(show(&f.evaluate(&e, None).unwrap()), "2");
    let err = Formula::compile("input(\"nope\")", &lib, &check, &Limits::default()).unwrap_err();
    assert_eq!((err.code, err.span), (ErrorCode::UnknownVariable, Span::new(6, 12)));
    let err = Formula::compile("input(1, 2)", &lib, &check, &Limits::default()).unwrap_err();
    assert_eq!(err.code, ErrorCode::WrongArgumentCount);
}

// ---- canonical printing ----

#[test]
fn canonical_text_round_trips() {
    for text in ["floor((Score-10)/2)", "a||(b&&c)", "-(-3)", "!(!a)", "2^(-1)", "(2^3)^2", "x[0]^2", "-x[1]"]
    {
        let tree = parse(text, &Limits::default()).unwrap();
        let printed = tree.to_string();
        let again =
            parse(&printed, &Limits::default()).unwrap_or_else(|e| panic!("{printed}: {}", e.message));
        assert!(tree.same_tree(&again), "{text} -> {printed}");
        assert_eq!(again.to_string(), printed, "printing is idempotent");
    }
}

fn arb_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_owned()),
        Just("Score".to_owned()),
        Just("My Var".to_owned()),
        Just("CL=Special Fighter".to_owned()),
        Just("x.y:z~w_1".to_owned()),
    ]
}

fn arb_expr() -> impl Strategy<Value = ast::Expr> {
    use ast::{BinaryOp, Expr, ExprKind, UnaryOp};
    let leaf = prop_oneof![
        (0u64..1_000_000, 0u32..4).prop_map(|(m, s)| ExprKind::Number(Decimal::new(m as i64, s))),
        "[a-z ]{0,6}".prop_map(|s| ExprKind::Str(s.into())),
        arb_name().prop_map(|n| ExprKind::Var(n.into())),
    ]
    .prop_map(|kind| Expr { kind, span: Span::default() });
    leaf.prop_recursive(6, 48, 4, |inner| {
        let ops = [
            BinaryOp::Or,
            BinaryOp::And,
            BinaryOp::Eq,
            BinaryOp::Ne,
            BinaryOp::Lt,
            BinaryOp::Gt,
            BinaryOp::Le,
            BinaryOp::Ge,
            BinaryOp::Add,
            BinaryOp::Sub,
            BinaryOp::Mul,
            BinaryOp::Div,
            BinaryOp::Rem,
            BinaryOp::Pow,
        ];
        let s = Span::default();
        prop_oneof![
            (prop::sample::select(ops.to_vec()), inner.clone(), inner.clone()).prop_map(move |(op, l, r)| {
                Expr {
                    kind: ExprKind::Binary { op, op_span: s, lhs: Box::new(l), rhs: Box::new(r) },
                    span: s,
                }
            }),
            (prop::bool::ANY, inner.clone()).prop_map(move |(neg, e)| Expr {
                kind: ExprKind::Unary {
                    op: if neg { UnaryOp::Neg } else { UnaryOp::Not },
                    op_span: s,
                    expr: Box::new(e)
                },
                span: s
            }),
            (arb_name(), prop::collection::vec(inner.clone(), 0..4)).prop_map(move |(n, args)| Expr {
                kind: ExprKind::Call { name: n.into(), name_span: s, args },
                span: s
            }),
            (arb_name(), inner).prop_map(move |(n, i)| Expr {
                kind: ExprKind::Index { name: n.into(), name_span: s, index: Box::new(i) },
                span: s
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any tree prints to text that parses back to the same tree.
    #[test]
    fn print_parse_round_trip(tree in arb_expr()) {
        let printed = tree.to_string();
        let limits = Limits { max_depth: 1000, ..Limits::default() };
        let parsed = parse(&printed, &limits);
        prop_assert!(parsed.is_ok(), "{printed}: {:?}", parsed.err().map(|e| e.message));
        let parsed = parsed.unwrap();
        prop_assert!(tree.same_tree(&parsed), "{printed} reparsed as {parsed}");
    }

    /// Integer arithmetic agrees with i128 arithmetic, and overflow is an error, never a value.
    #[test]
    fn integer_arithmetic_agrees_with_i128(a in any::<i64>(), b in any::<i64>(), op in 0usize..5) {
        let (sym, expected): (&str, Option<i128>) = match op {
            0 => ("+", (a as i128).checked_add(b as i128)),
            1 => ("-", (a as i128).checked_sub(b as i128)),
            2 => ("*", (a as i128).checked_mul(b as i128)),
            3 => ("%", if b == 0 { None } else { (a as i128).checked_rem(b as i128) }),
            _ => ("/", if b != 0 && (a as i128) % (b as i128) == 0 { Some(a as i128 / b as i128) } else { None }),
        };
        let e = Env::default().num("a", &a.to_string()).num("b", &b.to_string());
        let got = run_with(&format!("a {sym} b"), &e, None);
        let max = Decimal::MAX.mantissa();
        match expected {
            Some(x) if x.abs() <= max => prop_assert_eq!(show(&got.unwrap()), x.to_string()),
            Some(_) => prop_assert_eq!(got.unwrap_err().code, ErrorCode::Overflow),
            None if b == 0 && (op == 3 || op == 4) => prop_assert_eq!(got.unwrap_err().code, ErrorCode::DivisionByZero),
            None => {
                // A division that is not exact: compare against the rational value.
                let v = got.unwrap().as_number().unwrap();
                let back = v * Decimal::from(b);
                prop_assert!((back - Decimal::from(a)).abs() < Decimal::new(1, 6), "{a}/{b} = {v}");
            }
        }
    }

    /// No input string makes the parser or checker panic.
    #[test]
    fn no_string_panics(text in "\\PC{0,40}") {
        let _ = run(&text);
    }

    /// Strings made of formula characters (more likely to get deep into the parser) never panic.
    #[test]
    fn no_formula_like_string_panics(text in "[-+*/%^!<>=&|(),\\[\\]\"a-c0-9. ]{0,60}") {
        let _ = run(&text);
    }
}

// ---- diagnostics as a person sees them ----

fn render(text: &str) -> String {
    let err = match run(text) {
        Ok(v) => return format!("{text} = {v}"),
        Err(e) => e,
    };
    let report =
        miette::Report::new(err).with_source_code(miette::NamedSource::new("formula", text.to_owned()));
    let mut out = String::new();
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .with_width(100)
        .render_report(&mut out, report.as_ref())
        .unwrap();
    out
}

#[test]
fn diagnostics_render_like_rustc() {
    let cases = [
        "floor((Score-10)/2",
        "a || b && Flag",
        "2^3^2",
        "Scroe + 1",
        "abs(2, 3)",
        "if(a, 1, 2)",
        "Flag + 1",
        "d20Mod(Score) / (a - 4)",
        "1 = 1",
        "slice(arr, 3, 1)",
    ];
    let all: Vec<String> = cases.iter().map(|c| render(c)).collect();
    insta::assert_snapshot!(all.join("\n"));
}

// ---- the numeric fast path agrees with the reference tree evaluator ----

fn arb_numeric_formula() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("c".to_owned()),
        (-20i64..20).prop_map(|n| if n < 0 { format!("({n})") } else { n.to_string() }),
        (0i64..400).prop_map(|n| format!("{}.{:02}", n / 100, n % 100)),
    ];
    leaf.prop_recursive(5, 40, 3, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(vec!["+", "-", "*", "/", "%"]), inner.clone())
                .prop_map(|(l, op, r)| format!("({l} {op} {r})")),
            (inner.clone(), 0u32..4).prop_map(|(l, e)| format!("({l})^{e}")),
            inner.clone().prop_map(|x| format!("-({x})")),
            // User functions: inlined into whole-number programs when their arguments are
            // variables or constants.
            inner.clone().prop_map(|x| format!("d20Mod({x})")),
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("embed({x}, {y})")),
            (prop::sample::select(vec!["abs", "floor", "ceil", "round"]), inner.clone())
                .prop_map(|(f, x)| format!("{f}({x})")),
            (prop::sample::select(vec!["floor", "ceil"]), inner.clone(), inner.clone())
                .prop_map(|(f, l, r)| format!("{f}({l} / {r})")),
            (prop::sample::select(vec!["min", "max"]), prop::collection::vec(inner.clone(), 2..4))
                .prop_map(|(f, xs)| format!("{f}({})", xs.join(", "))),
            (inner.clone(), inner.clone(), inner.clone(), inner)
                .prop_map(|(p, q, x, y)| format!("if({p} > {q}, {x}, {y})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn programs_agree_with_trees(text in arb_numeric_formula(), a in -50i64..50, b in -5i64..5, c in 0i64..3) {
        let e = Env::default().num("a", &a.to_string()).num("b", &b.to_string()).num("c", &c.to_string());
        let lib = library();
        let fast = Formula::compile(&text, &lib, &CheckEnv::new(&e), &Limits::default())
            .and_then(|f| f.evaluate(&e, None));
        // The reference: the checked tree, not lowered into programs.
        let tree = parse(&text, &Limits::default()).unwrap();
        let mut checker = check::Checker::new(&e, &lib, None, 100);
        let node = checker.check(&tree).unwrap().node;
        let vars: Vec<(VarId, Arc<str>)> = checker.vars.iter().map(|(id, n, _)| (*id, n.clone())).collect();
        let reference = tree::eval::Evaluator::new(&e, &vars, None).eval(&node).map_err(|e| *e);
        match (&fast, &reference) {
            (Ok(x), Ok(y)) => prop_assert_eq!(x, y, "{}", text),
            (Err(x), Err(y)) => prop_assert_eq!((x.code, x.span), (y.code, y.span), "{}", text),
            _ => prop_assert!(false, "{text}: program {fast:?} vs tree {reference:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// When the whole-number program answers, it gives what general evaluation gives.
    #[test]
    fn int_programs_agree_with_evaluation(text in arb_numeric_formula(), a in -50i64..50, b in -5i64..5, c in 0i64..3) {
        let e = Env::default().num("a", &a.to_string()).num("b", &b.to_string()).num("c", &c.to_string());
        let lib = library();
        let Ok(f) = Formula::compile(&text, &lib, &CheckEnv::new(&e), &Limits::default()) else { return Ok(()) };
        let Some(program) = f.int_program() else { return Ok(()) };
        let names: Vec<&str> = f.variable_names().collect();
        let read = |slot: u32| match names.get(slot as usize).copied() {
            Some("a") => Some(a),
            Some("b") => Some(b),
            Some("c") => Some(c),
            _ => None,
        };
        if let Some(i) = run_int(program, read) {
            prop_assert_eq!(Ok(Value::Number(i.into())), f.evaluate(&e, None), "{}", text);
        }
    }
}

#[test]
fn int_programs_cover_d20_formulas_and_decline_fractions() {
    let e = env();
    let lib = library();
    let compile = |t: &str| Formula::compile(t, &lib, &CheckEnv::new(&e), &Limits::default()).unwrap();
    let f = compile("floor((Score-10)/2)");
    let p = f.int_program().expect("whole-number program");
    assert_eq!(run_int(p, |_| Some(14)), Some(2));
    assert_eq!(run_int(p, |_| Some(7)), Some(-2));
    // Not whole: the caller must take the general path.
    assert_eq!(run_int(compile("Score/4").int_program().unwrap(), |_| Some(14)), None);
    assert_eq!(run_int(compile("Score/0").int_program().unwrap(), |_| Some(14)), None);
    assert!(compile("Score * 1.5").int_program().is_none());
    assert!(compile("Score ^ 2").int_program().is_none());
}

/// The peephole pass fuses a variable or constant with the instruction that consumes it: the
/// typical formulas of game data run in fewer instructions, with the same answers.
#[test]
fn int_programs_fuse_operands_into_their_instructions() {
    let e = env();
    let lib = library();
    let compile = |t: &str| Formula::compile(t, &lib, &CheckEnv::new(&e), &Limits::default()).unwrap();
    let vars = |s: u32| Some([4i64, 1, 14][s as usize]);
    for (text, ops, value) in [
        ("a - b + Score", vec![IntOp::Var(0), IntOp::SubVar(1), IntOp::AddVar(2)], 17),
        ("max(a, b)", vec![IntOp::Var(0), IntOp::MaxVar(1)], 4),
        ("min(max(a, 1), 2)", vec![IntOp::Var(0), IntOp::MaxK(1), IntOp::MinK(2)], 2),
        ("a * b", vec![IntOp::Var(0), IntOp::MulVar(1)], 4),
        ("floor(a / 2)", vec![IntOp::Var(0), IntOp::FloorDivK(2)], 2),
    ] {
        let f = compile(text);
        let p = f.int_program().expect("whole-number program");
        assert_eq!(p, &ops[..], "{text}");
        assert_eq!(run_int(p, vars), Some(value), "{text}");
    }
}

/// A user function applied to variables and whole constants runs as its body's whole-number
/// program, each `arg(n)` read as the argument; other calls keep the general path.
#[test]
fn int_programs_inline_user_functions_on_simple_arguments() {
    let e = env();
    let lib = library();
    let compile = |t: &str| Formula::compile(t, &lib, &CheckEnv::new(&e), &Limits::default()).unwrap();
    let f = compile("d20Mod(Score)");
    let p = f.int_program().expect("inlined");
    assert_eq!(p, &[IntOp::Var(0), IntOp::SubK(10), IntOp::FloorDivK(2)][..]);
    assert_eq!(run_int(p, |_| Some(15)), Some(2));
    let f = compile("embed(a, 3)");
    let p = f.int_program().expect("inlined");
    assert_eq!(run_int(p, |_| Some(10)), Some(3));
    assert_eq!(f.evaluate(&e, None), Ok(Value::Number(0.into())), "floor((4 - 3) / 2)");
    // Not simple arguments, a decimal argument, a body that is not numeric: no program.
    assert!(compile("d20Mod(a + 1)").int_program().is_none());
    assert!(compile("d20Mod(2.5)").int_program().is_none());
    assert!(compile("pick(Flag, a, b)").int_program().is_none());
}

// ---- the remaining evaluation errors ----

/// A context that knows no values: every variable read is `evaluation.missing_value`.
struct Empty;
impl EvalContext for Empty {
    fn value(&self, _: VarId) -> Option<Value> {
        None
    }
}

#[test]
fn missing_values_are_errors_naming_the_variable() {
    let e = env();
    let lib = library();
    for text in ["Score + 1", "Name + \"x\"", "arr[0]", "Flag && Flag"] {
        let f = Formula::compile(text, &lib, &CheckEnv::new(&e), &Limits::default()).unwrap();
        let err = f.evaluate(&Empty, None).unwrap_err();
        assert_eq!(err.code, ErrorCode::MissingValue, "{text}");
        let name = f.variable_names().next().unwrap();
        assert!(err.message.contains(&format!("`{name}`")), "{text}: {}", err.message);
    }
    let number = Format::Number;
    let f = Formula::compile("value() + 1", &lib, &CheckEnv::new(&e).with_input(&number), &Limits::default())
        .unwrap();
    assert_eq!(f.evaluate(&e, None).unwrap_err().code, ErrorCode::MissingValue);
}

/// An external function that always fails at evaluation.
struct Broken;
#[derive(Debug)]
struct BoundBroken;
impl ExternalFunction for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn bind(&self, _: &mut CallSite<'_>) -> Result<Arc<dyn BoundFunction>, FormulaError> {
        Ok(Arc::new(BoundBroken))
    }
}
impl BoundFunction for BoundBroken {
    fn format(&self) -> Format {
        Format::Number
    }
    fn eval(&self, _: &[Value], _: &dyn EvalContext) -> Result<Value, String> {
        Err("the dice fell off the table".to_owned())
    }
}

#[test]
fn failing_external_functions_are_errors_at_the_call() {
    let e = env();
    let mut lib = library();
    lib.add_external(Arc::new(Broken)).unwrap();
    let text = "1 + broken()";
    let f = Formula::compile(text, &lib, &CheckEnv::new(&e), &Limits::default()).unwrap();
    assert!(!f.is_static(), "external functions are not static unless they say so");
    let err = f.evaluate(&e, None).unwrap_err();
    assert_eq!(err.code, ErrorCode::FunctionFailed);
    assert_eq!(&text[err.span.range()], "broken()");
    assert_eq!(err.message, "broken(): the dice fell off the table");
}

#[test]
fn every_error_code_is_documented() {
    let doc_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/formula-language.md");
    let doc = std::fs::read_to_string(doc_path).expect("docs/formula-language.md exists");
    for code in ErrorCode::ALL {
        assert!(
            doc.contains(&format!("| `{}` | {} |", code.as_str(), code.stage())),
            "{code} is not documented"
        );
    }
}

/// A context that answers NUMBER reads only by slot (as a sheet's plan does: it resolved every
/// formula's variables to positions beforehand) and has no `Value`s at all.
struct BySlot(Vec<Option<Num>>);

impl EvalContext for BySlot {
    fn value(&self, _: VarId) -> Option<Value> {
        None
    }

    fn num_at(&self, slot: usize) -> Option<Option<Num>> {
        self.0.get(slot).copied()
    }
}

/// Every NUMBER read goes through the slot-indexed read when the context offers it: formulas
/// evaluated as trees (a function call, a decimal) as well as whole-number programs. (Reads
/// by id only, the plan's general path failed on every tree formula and fell back to a slower
/// evaluation.)
#[test]
fn number_reads_go_by_slot_in_trees_and_programs() {
    let env = env();
    for (text, expected) in [
        ("d20Mod(Score) + a", "6"),
        ("Score * 1.5 - a", "17"),
        ("floor((Score - 10) / 2)", "2"),
        ("max(a, b) + 1", "5"),
    ] {
        let f = Formula::compile(text, &library(), &CheckEnv::new(&env), &Limits::default()).unwrap();
        let by_slot = BySlot(
            f.variables().map(|v| env.value(v).and_then(|v| v.as_number()).map(Num::from_decimal)).collect(),
        );
        assert_eq!(f.evaluate_num(&by_slot, None).unwrap().to_decimal(), d(expected), "{text}");
    }
    // A slot without a value is an error naming the variable, not a panic.
    let f = Formula::compile("d20Mod(Score)", &library(), &CheckEnv::new(&env), &Limits::default()).unwrap();
    let e = f.evaluate_num(&BySlot(vec![None]), None).unwrap_err();
    assert_eq!(e.code, ErrorCode::MissingValue);
    assert!(e.message.contains("Score"), "{}", e.message);
}

/// Decimal text as data and requests write it: whole numbers (read as `i64`s when they fit),
/// fractions with digits on one side of the point at least, and nothing else. Each is the
/// exact decimal the text says, at the scale it is written in.
#[test]
fn decimal_text_parses_exactly() {
    let ok = |t: &str, d: &str| {
        let got = parse_decimal(t).unwrap_or_else(|e| panic!("`{t}`: {e}"));
        let want = Decimal::from_str(d).expect("test decimal");
        assert_eq!((got, got.scale()), (want, want.scale()), "`{t}`");
    };
    ok("12", "12");
    ok("-12", "-12");
    ok(" 007 ", "7");
    ok("0", "0");
    ok("999999999999999999", "999999999999999999");
    // Past 18 digits the `i64` path is not taken.
    ok("9999999999999999999", "9999999999999999999");
    ok("-9223372036854775808", "-9223372036854775808");
    ok("1.50", "1.50");
    ok(".5", "0.5");
    ok("-.5", "-0.5");
    for bad in ["", "-", "1.", ".", "1e3", "+5", "1.2.3", "12a", "0x10"] {
        let e = parse_decimal(bad).expect_err(bad);
        assert!(e.contains("is not a decimal number"), "`{bad}`: {e}");
    }
    let e = parse_decimal("123456789012345678901234567890").expect_err("too many digits");
    assert!(e.contains("28 significant digits"), "{e}");
}

/// A format made again with the same definition (a ruleset loaded twice, in two registries) is
/// the one kept the first time; one defined otherwise is another.
#[test]
fn custom_formats_are_interned_by_definition() {
    #[derive(Debug)]
    struct Tagged(&'static str);
    impl FormatType for Tagged {
        fn name(&self) -> &str {
            "TAGGED"
        }
        fn parse_literal(&self, _: &str) -> Result<Arc<dyn CustomData>, String> {
            Err(self.0.to_owned())
        }
        fn default_value(&self) -> Arc<dyn CustomData> {
            Arc::new(Pair(Decimal::ZERO, Decimal::ZERO))
        }
    }
    let first = FormatRegistry::new().register(Arc::new(Tagged("a"))).unwrap();
    let again = FormatRegistry::new().register(Arc::new(Tagged("a"))).unwrap();
    let other = CustomFormat::new(Arc::new(Tagged("b")));
    let same = |x: &CustomFormat, y: &CustomFormat| {
        std::ptr::addr_eq(x.kind() as *const dyn FormatType, y.kind() as *const dyn FormatType)
    };
    assert!(same(&first, &again));
    assert!(!same(&first, &other));
    // Each keeps its own behaviour; handles compare by name, as before.
    assert_eq!(first.kind().parse_literal("x").unwrap_err(), "a");
    assert_eq!(other.kind().parse_literal("x").unwrap_err(), "b");
    assert_eq!(first, other);
}
