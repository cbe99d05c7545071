//! What every dialect's fuzz target checks of a compile: what compiles loads and its rules
//! check; what is refused, is refused at a place in the file it was given.

/// A dialect's compile of `file` (holding `text`): its translation loads and its rules check,
/// or every error points into `file`.
pub fn translation_loads(
    compiled: Result<dialects::creature::Compiled, Vec<data::Diagnostic>>,
    file: &str,
    text: &str,
) {
    match compiled {
        Ok(c) => {
            let r = c
                .load()
                .unwrap_or_else(|e| panic!("the translation does not load: {e:#?}\n{}", c.files[1].1));
            if let Err(e) = events::RuleBook::compile(std::sync::Arc::new(r)) {
                panic!("the translation's rules do not check: {e:#?}\n{}", c.files[1].1);
            }
        }
        Err(errors) => {
            for e in errors {
                assert_eq!(e.at.as_ref().map(|a| a.file()), Some(file), "{text:?}: {e:?}");
            }
        }
    }
}
