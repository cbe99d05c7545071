use formula::*;
struct S;
impl Symbols for S {
    fn resolve(&self, _: &str) -> Option<(VarId, Format)> {
        Some((VarId(0), Format::Number))
    }
}
impl EvalContext for S {
    fn value(&self, _: VarId) -> Option<Value> {
        Some(Value::Number(1.into()))
    }
}
fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let kind = std::env::args().nth(2).unwrap();
    let text = if kind == "paren" {
        "(".repeat(n) + "a" + &")".repeat(n)
    } else if kind == "call" {
        "abs(".repeat(n) + "a" + &")".repeat(n)
    } else {
        vec!["a"; n].join("+")
    };
    let t = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let lim = Limits { max_depth: 100000, max_len: 1 << 30 };
            let f = Formula::compile(&text, &Library::new(), &CheckEnv::new(&S), &lim).unwrap();
            let v = f.evaluate(&S, None).unwrap();
            println!("{} {}", v, f.canonical().len());
        })
        .unwrap();
    t.join().unwrap();
}
