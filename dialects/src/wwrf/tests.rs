//! WWRF: every example of the guide (`../shared/seeds/wwrf-formalization-guide.txt`) reads as
//! it says; refusals carry their codes and point at their text; conditions take exactly the
//! guide's and/or shapes with its precedence; the example folder compiles, and a day with
//! manipulated votes and a night with an attack on a protected player play as the guide says.

use super::write::{cond_formula, scale_formula};
use super::*;

fn line(text: &str) -> Line {
    parse_line(text, 0, 1).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn refused(text: &str) -> (&'static str, String) {
    match parse_line(text, 0, 1) {
        Ok(l) => panic!("{text:?} reads: {l:?}"),
        Err(e) => (e.code, text.get(e.span.clone()).unwrap_or("?").to_owned()),
    }
}

fn val(text: &str) -> Value {
    value(text, 0).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn sel(sigil: char, name: &str) -> Base {
    Base::Selector(sigil, name.into())
}

/// Every trigger of the guide's table reads, as the kind it is.
// long: a table of every trigger.
#[test]
fn every_trigger_of_the_guide_reads() {
    let timing = |when, day, prompting| TriggerKind::Timing { when, day, prompting };
    let cases: Vec<(&str, TriggerKind)> = vec![
        ("Start Night", timing(When::Start, Some(false), true)),
        ("End Night", timing(When::End, Some(false), true)),
        ("Start Day", timing(When::Start, Some(true), true)),
        ("End Day", timing(When::End, Some(true), true)),
        ("Immediate Night", timing(When::Immediate, Some(false), true)),
        ("Immediate Day", timing(When::Immediate, Some(true), true)),
        ("End Phase", timing(When::End, None, true)),
        ("Start Phase", timing(When::Start, None, true)),
        ("Immediate", timing(When::Immediate, None, true)),
        ("Pre-End Night", timing(When::PreEnd(1), Some(false), true)),
        ("Pre-End Day", timing(When::PreEnd(1), Some(true), true)),
        ("Second Pre-End Night", timing(When::PreEnd(2), Some(false), true)),
        ("Third Pre-End Night", timing(When::PreEnd(3), Some(false), true)),
        ("Fourth Pre-End Night", timing(When::PreEnd(4), Some(false), true)),
        ("Second Pre-End Day", timing(When::PreEnd(2), Some(true), true)),
        ("Third Pre-End Day", timing(When::PreEnd(3), Some(true), true)),
        ("Fourth Pre-End Day", timing(When::PreEnd(4), Some(true), true)),
        ("Passive End Day", timing(When::End, Some(true), false)),
        ("Passive End Night", timing(When::End, Some(false), false)),
        ("Passive Start Day", timing(When::Start, Some(true), false)),
        ("Passive Start Night", timing(When::Start, Some(false), false)),
        ("Passive Start Phase", timing(When::Start, None, false)),
        ("Passive End Phase", timing(When::End, None, false)),
        ("Starting", TriggerKind::Starting),
        ("Passive", TriggerKind::Passive),
        ("On Death", TriggerKind::Death { how: Death::Death, who: None }),
        ("On Killed", TriggerKind::Death { how: Death::Killed, who: None }),
        ("On Banishment", TriggerKind::Death { how: Death::Banishment, who: None }),
        ("On Banished", TriggerKind::Death { how: Death::Banished, who: None }),
        ("On Lynch", TriggerKind::Death { how: Death::Lynch, who: None }),
        ("On Defense", TriggerKind::Defense(None)),
        ("On Active Defense", TriggerKind::Defense(Some("active"))),
        ("On Passive Defense", TriggerKind::Defense(Some("passive"))),
        ("On Partial Defense", TriggerKind::Defense(Some("partial"))),
        ("On Recruitment Defense", TriggerKind::Defense(Some("recruitment"))),
        ("On Absence Defense", TriggerKind::Defense(Some("absence"))),
        ("On Visited", TriggerKind::Visited { who: None, filter: None }),
        ("On Action", TriggerKind::Action { who: None, any: false, filter: None }),
        ("On Any Action", TriggerKind::Action { who: None, any: true, filter: None }),
        ("On Disbandment", TriggerKind::Named("On Disbandment")),
        ("On Redirect", TriggerKind::Named("On Redirect")),
        ("On Betrayal", TriggerKind::Named("On Betrayal")),
        ("On Poll Closed", TriggerKind::Named("On Poll Closed")),
        ("On Poll Skipped", TriggerKind::Named("On Poll Skipped")),
        ("On Poll Win", TriggerKind::PollWin(None)),
        ("On Poll `Election` Win", TriggerKind::PollWin(Some("Election".into()))),
        ("On Role Change", TriggerKind::Named("On Role Change")),
        ("On Removal", TriggerKind::Named("On Removal")),
        ("On End", TriggerKind::Named("On End")),
        ("On Emitted", TriggerKind::Emitted { value: None, end: false }),
        ("On `Howl` Emitted", TriggerKind::Emitted { value: Some("Howl".into()), end: false }),
        ("On End Emitted", TriggerKind::Emitted { value: None, end: true }),
        ("On `Howl` End Emitted", TriggerKind::Emitted { value: Some("Howl".into()), end: true }),
        ("On Vote Add", TriggerKind::Named("On Vote Add")),
        ("On Vote Remove", TriggerKind::Named("On Vote Remove")),
        ("On Vote Change", TriggerKind::Named("On Vote Change")),
        ("On Hammer", TriggerKind::Named("On Hammer")),
    ];
    for (t, want) in cases {
        let l = line(&format!("{t}: Untarget"));
        assert_eq!(l.trigger.kind, want, "{t}");
        assert_eq!(l.trigger.span, 0..t.len(), "{t}");
    }
    // The complex ones: a player selector, and the visit and action filters.
    let l = line("On @(Role:Citizen) Death: Untarget");
    let TriggerKind::Death { how: Death::Death, who: Some(who) } = &l.trigger.kind else { panic!("{l:?}") };
    assert_eq!(
        who.base,
        Base::Advanced { sigil: '@', property: "Role".into(), value: "Citizen".into(), negate: false }
    );
    let l = line("On @Target Killed: Untarget");
    assert!(
        matches!(&l.trigger.kind, TriggerKind::Death { how: Death::Killed, who: Some(w) } if w.is("Target"))
    );
    let l = line("On Visited [Killing]: Untarget");
    assert_eq!(
        l.trigger.kind,
        TriggerKind::Visited { who: None, filter: Some(Filter { negate: false, ability: "Killing".into() }) }
    );
    let l = line("On @Target Visited [!Attack Killing]: Untarget");
    let TriggerKind::Visited { who: Some(w), filter: Some(f) } = &l.trigger.kind else { panic!("{l:?}") };
    assert!(w.is("Target") && f.negate && f.ability == "Attack Killing");
    let l = line("On Any Action [Investigating]: Untarget");
    assert!(
        matches!(&l.trigger.kind, TriggerKind::Action { any: true, filter: Some(f), .. } if f.ability == "Investigating")
    );
    let l = line("On @Self Action [!Killing]: Untarget");
    assert!(
        matches!(&l.trigger.kind, TriggerKind::Action { any: false, who: Some(_), filter: Some(f) } if f.negate)
    );
}

/// Every restriction of the guide's table, with its example.
#[test]
fn every_restriction_of_the_guide_reads() {
    use RestrictionKind as R;
    let cases: Vec<(&str, R)> = vec![
        ("Temporal: Day 0", R::Temporal { day: true, number: Some(0), onwards: false }),
        ("Temporal: Night 2+", R::Temporal { day: false, number: Some(2), onwards: true }),
        ("Temporal: Night", R::Temporal { day: false, number: None, onwards: false }),
        ("Attribute: has `Wolfish`", R::Attribute { actor: None, has: true, attribute: "Wolfish".into() }),
        ("Attribute: lacks `Wolfish`", R::Attribute { actor: None, has: false, attribute: "Wolfish".into() }),
        ("Succession: No Succession", R::Succession { target: false }),
        ("Succession: No Target Succession", R::Succession { target: true }),
        ("Quantity: 3", R::Quantity(3)),
        ("Status: Ghostly", R::Status(Status::Ghostly)),
        ("Status: Any", R::Status(Status::Any)),
        ("Status: Alive", R::Status(Status::Alive)),
    ];
    for (r, want) in cases {
        let text = format!("End Night: Untarget [{r}]");
        let l = line(&text);
        assert_eq!(l.params.restrictions.len(), 1, "{r}");
        assert_eq!(l.params.restrictions[0].kind, want, "{r}");
        assert_eq!(&text[l.params.restrictions[0].span.clone()], r);
    }
    let l = line("End Night: Untarget [Attribute: @Target lacks `Wolfish`]");
    let R::Attribute { actor: Some(a), has: false, attribute } = &l.params.restrictions[0].kind else {
        panic!()
    };
    assert!(a.is("Target") && attribute == "Wolfish");
    let l = line("End Night: Untarget [Condition: @Target is in #Wolfpack]");
    let R::Condition(Cond::In(p, g)) = &l.params.restrictions[0].kind else { panic!("{l:?}") };
    assert!(p.is("Target") && g.base == Base::Group("Wolfpack".into()));
    // Several in one block; after the trigger, or at the end of the line (the form).
    let a = line("Start Day [Temporal: Day 1+, Succession: No Succession]: Untarget");
    let b = line("Start Day: Untarget [Temporal: Day 1+, Succession: No Succession]");
    assert_eq!(a.params.restrictions.len(), 2);
    assert_eq!(
        a.params.restrictions.iter().map(|r| &r.kind).collect::<Vec<_>>(),
        b.params.restrictions.iter().map(|r| &r.kind).collect::<Vec<_>>()
    );
    let l = line("End Night: Attack @Selection [Temporal: Night 2+, Quantity: 3]");
    assert_eq!(l.params.restrictions.len(), 2);
    assert!(matches!(l.ability.kind, AbilityKind::Killing { how: Kill::Attack, .. }));
}

/// Every scaling of the guide's table, and its count as a formula.
#[test]
fn every_scaling_of_the_guide_reads() {
    let cases: Vec<(&str, Scaling, &str)> = vec![
        ("x2", Scaling::Times(2), "2"),
        ("$total/2", Scaling::Divide(Count::Total, 2), "floor(TOTAL / 2)"),
        ("$living/3", Scaling::Divide(Count::Living, 3), "floor(LIVING / 3)"),
        (
            "$total<10 ⇒ 1, $total≥10 ⇒ 2, 3",
            Scaling::Cases(vec![(Count::Total, Cmp::Lt, 10, 1), (Count::Total, Cmp::Ge, 10, 2)], Some(3)),
            "if(TOTAL < 10, 1, if(TOTAL >= 10, 2, 3))",
        ),
        ("Odd: x1, Even: x2", Scaling::OddEven { odd: 1, even: 2 }, "if(PHASE_NUMBER % 2 == 1, 1, 2)"),
    ];
    for (s, want, formula) in cases {
        let l = line(&format!("Start Night ⟨{s}⟩: Untarget"));
        assert_eq!(l.params.scaling.as_ref(), Some(&want), "{s}");
        assert_eq!(scale_formula(&want), formula, "{s}");
    }
    // Parameters in the guide's order: restrictions, scaling, other, prompt.
    let l = line("Start Night [Quantity: 2] ⟨x2⟩ {Forced, Direct} |silent:custom.prompt.1|: Untarget");
    assert_eq!(l.params.restrictions.len(), 1);
    assert_eq!(l.params.scaling, Some(Scaling::Times(2)));
    assert_eq!(l.params.other, [Other::Forced(None), Other::Direct]);
    assert_eq!(l.params.prompt, Some(Prompt { silent: true, name: "custom.prompt.1".into() }));
    let l = line("Start Night {Forced: @Self, Visitless, Vanishing} |custom.prompt.1|: Untarget");
    assert!(matches!(&l.params.other[0], Other::Forced(Some(v)) if v.is("Self")));
    assert_eq!(l.params.other[1..], [Other::Visitless, Other::Vanishing]);
    assert_eq!(l.params.prompt, Some(Prompt { silent: false, name: "custom.prompt.1".into() }));
}

/// The values of the guide's type tables and text.
#[test]
fn the_guides_values_and_selectors_read() {
    assert_eq!(val("@Self").base, sel('@', "Self"));
    assert_eq!(val("@Result3").base, sel('@', "Result3"));
    assert_eq!(val("^All").base, sel('^', "All"));
    assert_eq!(val("&Self").base, sel('&', "Self"));
    assert_eq!(
        val("@(Role:!Citizen)").base,
        Base::Advanced { sigil: '@', property: "Role".into(), value: "Citizen".into(), negate: true }
    );
    assert_eq!(
        val("^(Cat:Killing)").base,
        Base::Advanced { sigil: '^', property: "Cat".into(), value: "Killing".into(), negate: false }
    );
    assert_eq!(
        val("&(Align:!Townsfolk)").base,
        Base::Advanced { sigil: '&', property: "Align".into(), value: "Townsfolk".into(), negate: true }
    );
    assert!(
        matches!(val("@(FullCat:Townsfolk-Power)").base, Base::Advanced { ref value, .. } if value == "Townsfolk-Power")
    );
    let c = val("`Citizen`[role]");
    assert_eq!((c.base, c.annotation), (Base::Constant("Citizen".into()), Some("role".into())));
    let p = val("@Target->Role");
    assert_eq!((p.base, p.props), (sel('@', "Target"), vec!["Role".to_owned()]));
    assert_eq!(val("@All->Count").props, ["Count"]);
    assert_eq!(val("@(Group:Wolfpack)->MostFreqRole").props, ["MostFreqRole"]);
    assert_eq!(val("@Self->Attr(Marker)").props, ["Attr(Marker)"]);
    let list = val("`Citizen`+`Wolf`");
    assert!(matches!(list.base, Base::List(ref l) if l.len() == 2));
    assert_eq!(val("@ID:350000308900100207").base, Base::Id("350000308900100207".into()));
    assert_eq!(val("%Player1%").base, Base::Host("Player1".into()));
    assert_eq!(val("#Wolfpack").base, Base::Group("Wolfpack".into()));
    assert_eq!(val("$living").base, Base::Variable("living".into()));
    assert_eq!(val("-1").base, Base::Number(-1));
    assert!(matches!(val("$total/2").base, Base::Division(..)));
    assert_eq!(val("Townsfolk").base, Base::Word("Townsfolk".into()));
    // An info text's selectors stay text inside backticks.
    assert_eq!(val("`Attacked @Target`").base, Base::Constant("Attacked @Target".into()));
}

/// Every ability syntax the guide gives, in each variant.
// long: a table of every syntax variant.
#[test]
fn every_ability_syntax_of_the_guide_reads() {
    use AbilityKind as A;
    let kill = |l: &str| match line(&format!("End Night: {l}")).ability.kind {
        A::Killing { how, target } => (how, target.is("Selection")),
        other => panic!("{l}: {other:?}"),
    };
    assert_eq!(kill("Kill @Selection"), (Kill::Kill, true));
    assert_eq!(kill("Attack @Selection"), (Kill::Attack, true));
    assert_eq!(kill("True Kill @Selection"), (Kill::TrueKill, true));
    assert_eq!(kill("Lynch @Selection"), (Kill::Lynch, true));
    assert_eq!(kill("Banish @Selection"), (Kill::Banish, true));
    assert_eq!(kill("True Banish @Selection"), (Kill::TrueBanish, true));
    let inv = |l: &str| match line(&format!("Start Night: {l}")).ability.kind {
        A::Investigating { what, levels } => (what, levels),
        other => panic!("{l}: {other:?}"),
    };
    let (w, lv) = inv("Role Investigate @Selection");
    assert!(matches!(w, Investigation::Role(_)) && lv == Levels::default());
    let (w, lv) = inv("Class Investigate @Selection (SD)");
    assert!(matches!(w, Investigation::Class(_)) && lv == Levels { weak: false, strong: true });
    let (w, lv) = inv("Category Investigate @Selection (WD)");
    assert!(matches!(w, Investigation::Category(_)) && lv == Levels { weak: true, strong: false });
    let (w, lv) = inv("Alignment Investigate @Selection (WD, SD)");
    assert!(matches!(w, Investigation::Alignment(_)) && lv == Levels { weak: true, strong: true });
    let (_, lv) = inv("Role Investigate @Selection (SD, WD)");
    assert_eq!(lv, Levels { weak: true, strong: true });
    let (w, _) = inv("Attribute Investigate @Selection for `Wolfish`");
    assert!(matches!(w, Investigation::Attribute(p, a) if p.is("Selection") && a.text() == Some("Wolfish")));
    let (w, lv) = inv("Investigate `Citizen` Count (WD)");
    assert!(matches!(w, Investigation::Count(r) if r.text() == Some("Citizen")) && lv.weak);
    let (w, _) = inv("Investigate @(Role:Citizen) Count");
    assert!(matches!(w, Investigation::PlayerCount(_)));
    assert_eq!(TARGET_TYPES.len(), 9, "the guide's nine");
    for ty in TARGET_TYPES {
        let l = line(&format!("Immediate Day: Target @Selection ({ty})"));
        assert!(matches!(&l.ability.kind, A::Target { ty: t, .. } if t == *ty), "{ty}");
    }
    assert_eq!(line("Immediate Day: Untarget").ability.kind, A::Untarget);
    let l = line("Start Night: Weakly Disguise @Selection as `Citizen` (~Phase)");
    assert!(
        matches!(&l.ability.kind, A::Disguise { strong: false, role, duration: Some(Duration::Phase), .. } if role.text() == Some("Citizen"))
    );
    let l = line("Starting: Strongly Disguise @Self as `Citizen`");
    assert!(matches!(&l.ability.kind, A::Disguise { strong: true, duration: None, .. }));
    // Protecting: the four syntaxes, every killing filter, every defense.
    let prot = |l: &str| match line(&format!("Start Night: {l}")).ability.kind {
        A::Protect { from, by, through, during, duration, .. } => {
            (from, by.is_some(), through, during, duration)
        }
        other => panic!("{l}: {other:?}"),
    };
    assert_eq!(
        prot(
            "Protect @Selection from `Attacks` by @(Role:Werewolf) through Active Defense during Night (~NextPhase)"
        ),
        (KillFilter::Attacks, true, Defense::Active, Some(false), Some(Duration::NextPhase))
    );
    assert_eq!(
        prot("Protect @Selection from `Kills` by @Others through Passive Defense (~UntilUse)"),
        (KillFilter::Kills, true, Defense::Passive, None, Some(Duration::UntilUse))
    );
    assert_eq!(
        prot("Protect @Self from `Lynches` through Partial Defense during Day"),
        (KillFilter::Lynches, false, Defense::Partial, Some(true), None)
    );
    assert_eq!(
        prot("Protect @Self from `Attacks & Lynches` through Recruitment Defense"),
        (KillFilter::AttacksLynches, false, Defense::Recruitment, None, None)
    );
    assert_eq!(prot("Protect @Self from `All` through Active Defense").0, KillFilter::All);
    assert_eq!(prot("Protect @Self from `Banishments` through Active Defense").0, KillFilter::Banishments);
    let (_, _, through, _, _) = prot("Protect @Self from `All` through Absence at @Selection (~Phase)");
    assert!(matches!(through, Defense::Absence(ref l) if l.is("Selection")));
    // The killing filters stop what the guide's list says.
    use KillFilter as F;
    for (f, stops) in [
        (F::Attacks, [true, false, false, false]),
        (F::Kills, [true, true, false, false]),
        (F::Lynches, [false, false, true, false]),
        (F::AttacksLynches, [true, false, true, false]),
        (F::All, [true, true, true, false]),
        (F::Banishments, [false, false, false, true]),
    ] {
        let got = [Kill::Attack, Kill::Kill, Kill::Lynch, Kill::Banish].map(|k| f.stops(k));
        assert_eq!(got, stops, "{f:?}");
        assert!(!f.stops(Kill::TrueKill) && !f.stops(Kill::TrueBanish));
    }
    // Applying, redirecting, manipulating.
    let l = line("Starting: Add `Marker` to @Selection (~Persistent) (a, b, c)");
    assert!(
        matches!(&l.ability.kind, A::Apply { duration: Some(Duration::Persistent), values, .. } if values == &["a", "b", "c"])
    );
    let l = line("Starting: Add `Marker` to @Selection");
    assert!(matches!(&l.ability.kind, A::Apply { duration: None, values, .. } if values.is_empty()));
    let l = line("Starting: Remove `Marker` from @Target");
    assert!(matches!(&l.ability.kind, A::Unapply { attribute, .. } if attribute.text() == Some("Marker")));
    let l = line("Starting: Change `Marker` value `2` to `Wolf` for @Self");
    assert!(matches!(&l.ability.kind, A::Change { index: 2, .. }));
    let l = line("Start Night: Redirect `Killing` to @Selection (~Phase)");
    assert!(matches!(&l.ability.kind, A::Redirect { from: None, duration: Some(Duration::Phase), .. }));
    let l = line("Start Night: Redirect `non-killing abilities` from @All to @Selection");
    assert!(matches!(&l.ability.kind, A::Redirect { from: Some(_), .. }));
    let man = |l: &str| match line(&format!("Immediate Day: {l}")).ability.kind {
        A::Manipulate { votes, absolute, amount, duration, .. } => (votes, absolute, amount.base, duration),
        other => panic!("{l}: {other:?}"),
    };
    assert_eq!(
        man("Manipulate @Selection's public voting power to 2 (~Phase)"),
        (Votes::Public, true, Base::Number(2), Some(Duration::Phase))
    );
    assert_eq!(
        man("Manipulate @Self's special public voting power by -1 (~UntilSecondUse)"),
        (Votes::Special, false, Base::Number(-1), Some(Duration::UntilSecondUse))
    );
    assert_eq!(man("Manipulate @Self's private voting power by 3").0, Votes::Private);
    // Every duration of the attribute section.
    for (name, d) in DURATIONS {
        let l = line(&format!("Immediate Day: Manipulate @Self's public voting power by 1 (~{name})"));
        assert!(matches!(l.ability.kind, A::Manipulate { duration: Some(x), .. } if x == *d), "{name}");
    }
}

/// The conditions of the guide's table, and/or in exactly its shapes, with its precedence.
#[test]
fn conditions_take_the_guides_shapes_and_precedence() {
    let c = |t: &str| condition(t, 0).unwrap_or_else(|e| panic!("{t}: {e}"));
    assert!(matches!(c("@Target->Role is `Citizen`"), Cond::Is(..)));
    assert!(matches!(c("@Target->Role is not `Citizen`"), Cond::IsNot(..)));
    assert!(matches!(c("$living > 3"), Cond::Greater(..)));
    assert!(matches!(c("$living < 3"), Cond::Less(..)));
    assert!(matches!(c("@Target exists"), Cond::Exists(..)));
    assert!(matches!(c("@Self has `Wolfish`"), Cond::Has(..)));
    assert!(matches!(c("@Target is in #Wolfpack"), Cond::In(..)));
    assert!(matches!(c("@Target is part of @(Class:Werewolf)"), Cond::PartOf(..)));
    assert!(matches!(c("not (@Target exists)"), Cond::Not(_)));
    for (t, n) in [
        ("(@Target exists) and ($living > 3)", 2),
        ("(@Target exists) and ($living > 3) and (@Self has `A`)", 3),
        ("(@Target exists) and ($living > 3) and (@Self has `A`) and ($total < 9)", 4),
    ] {
        assert!(matches!(c(t), Cond::And(ref v) if v.len() == n), "{t}");
        let or = t.replace(" and ", " or ");
        assert!(matches!(c(&or), Cond::Or(ref v) if v.len() == n), "{or}");
    }
    // `(A) and (B) or (C)`: A, and B or C; `(A) or (B) and (C)`: C, and A or B.
    let and_or = c("($living > 1) and ($living > 2) or ($living > 3)");
    assert_eq!(cond_formula(&and_or).expect("compiles"), "(LIVING > 1) && ((LIVING > 2) || (LIVING > 3))");
    let or_and = c("($living > 1) or ($living > 2) and ($living > 3)");
    assert_eq!(cond_formula(&or_and).expect("compiles"), "((LIVING > 1) || (LIVING > 2)) && (LIVING > 3)");
    // The shapes the guide does not allow, each refused at the condition.
    for bad in [
        "(@Target exists) and (@Self has `A`) or (@Target exists) and ($living > 1)",
        "(@Target exists) and ($living > 1) and ($living > 2) and ($living > 3) and ($living > 4)",
        "((@Target exists) and ($living > 1)) and ($living > 2)",
        "(@Target exists) xor ($living > 1)",
    ] {
        let e = condition(bad, 0).expect_err(bad);
        assert_eq!(e.code, codes::CONDITION, "{bad}: {e}");
    }
    // Lists compare their first values: `is` compares the first of each ([a,b] is [a,c]).
    assert_eq!(cond_formula(&c("`a`+`b` is `a`+`c`")).expect("compiles"), "\"a\" == \"a\"");
    assert_eq!(cond_formula(&c("@Self->Role is `Citizen`")).expect("compiles"), "ROLE == \"Citizen\"");
}

/// What the guide does not define is refused with its code, pointing at the text.
#[test]
fn refusals_name_what_and_where() {
    let cases: Vec<(&str, &str, &str)> = vec![
        ("Start Dusk: Untarget", codes::UNKNOWN_TRIGGER, "Start Dusk"),
        ("On Sneeze: Untarget", codes::UNKNOWN_TRIGGER, "On Sneeze"),
        ("End Night: Untarget [Weather: Rain]", codes::UNKNOWN_RESTRICTION, "Weather"),
        ("End Night: Untarget [Succession: Sometimes]", codes::UNKNOWN_RESTRICTION, "Sometimes"),
        ("End Night: Untarget [Status: Sleepy]", codes::UNKNOWN_RESTRICTION, "Sleepy"),
        ("End Night: Teleport @Selection", codes::UNKNOWN_ABILITY, "Teleport @Selection"),
        ("End Night: Whisper to #Wolfpack", codes::UNSUPPORTED_ABILITY, "Whisper to #Wolfpack"),
        ("End Night: Untarget [Condition: (@Target exists and ($living > 1)]", codes::SYNTAX, "("),
        ("End Night: Untarget [Condition: @Target frobs @Self]", codes::CONDITION, "@Target frobs @Self"),
        ("Start Night ⟨y2⟩: Untarget", codes::SCALING, "y2"),
        (
            "Start Night: Manipulate @Self's public voting power by 1 (~Forever)",
            codes::DURATION,
            "(~Forever)",
        ),
        ("Start Night ⟨x2⟩ [Quantity: 1]: Untarget", codes::SYNTAX, "[Quantity: 1]"),
        ("Start Night Untarget", codes::SYNTAX, "Start Night Untarget"),
        ("Start Night: Target @Selection (Weather)", codes::SYNTAX, "Target @Selection (Weather)"),
    ];
    for (text, code, at) in cases {
        assert_eq!(refused(text), (code, at.to_owned()), "{text}");
    }
    // The condition's unbalanced parenthesis is found inside the condition alone, too.
    let e = condition("(@Target exists) and ($living > 1", 10).expect_err("unbalanced");
    assert_eq!((e.code, e.span.start), (codes::CONDITION, 10 + 21));
    // A header's error lies on the line's characters, its trailing space trimmed (a fuzz
    // finding: a two-byte character after the name).
    let text = "**Citi**\u{5b9}i* \n";
    let e = parse_file(text).expect_err("no header");
    assert!(text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end), "{e}");
    assert_eq!(&text[e.span.clone()], "\u{5b9}i*");
    // Headers: a class or category the guide does not list, text before the header.
    for (file, code) in [
        ("**Seer** | Townsfolk Seeing\n", codes::HEADER),
        ("**Seer** | Wizard Investigative\n", codes::HEADER),
        ("**Pyro** | Solo Killing\n", codes::HEADER),
        ("hello\n**Seer** | Townsfolk Investigative\n", codes::HEADER),
        ("**Seer** | Townsfolk Investigative\n__Formalized__\nStart Night Untarget\n", codes::SYNTAX),
    ] {
        let e = parse_file(file).expect_err(file);
        assert_eq!(e.code, code, "{file}: {e}");
    }
}

/// An element file in the guide's formats: the header, sections, flags and lines, each line
/// numbered from 1 and at its place in the file.
#[test]
fn element_files_read_in_the_guides_formats() {
    let text = "**Pyromaniac** | Solo Killing - Pyro Team\n__Basics__\nBurns things.\n__Details__\nMore.\n\n__Simplified__\nBurns.\n\n__Formalized__\nUnique Role\nHaunted Role\nStart Night: Add `Doused` to @Selection\nEnd Night: Kill @(Attr:Doused) [Temporal: Night 2+]\n\n__Card__\nA card.\n**Pyro Team**\n__Basics__\nThe pyro.\n\n__Formalized__\nWin Condition: @(Role:Pyromaniac), @Dead\nNo Abilities\n**Wolfpack** | Werewolf Group\n__Basics__\nWolves.\n__Members__\nAll wolves.\n\n__Formalized__\nUnique Group\nNo Abilities\n**Doused** | Attribute\n__Formalized__\nNo Abilities\n";
    let es = parse_file(text).expect("reads");
    assert_eq!(es.len(), 4);
    let p = &es[0];
    assert_eq!(
        p.kind,
        ElementKind::Role {
            class: "Solo".into(),
            category: "Killing".into(),
            team: Some("Pyro Team".into())
        }
    );
    assert!(p.unique && p.haunted);
    assert_eq!(&text[p.name_span.clone()], "Pyromaniac");
    assert_eq!(p.lines.iter().map(|l| l.number).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(&text[p.lines[1].span.clone()], "End Night: Kill @(Attr:Doused) [Temporal: Night 2+]");
    assert!(matches!(&es[1].kind, ElementKind::Team { win } if win.len() == 2));
    assert_eq!(es[2].kind, ElementKind::Group { team: "Werewolf".into() });
    assert!(es[2].unique);
    assert_eq!(es[3].kind, ElementKind::Attribute);
}

/// Any text reads or errs inside itself; nothing panics.
#[test]
fn any_line_reads_or_errs_inside_it() {
    use proptest::prelude::*;
    let words = prop::sample::select(vec![
        "Start Night",
        "End Day",
        "On Death",
        ":",
        " ",
        "[",
        "]",
        "⟨",
        "⟩",
        "{",
        "}",
        "|",
        "(",
        ")",
        "`",
        "Temporal: Night 2+",
        "Quantity: 3",
        "Condition:",
        "@Selection",
        "@(Role:Citizen)",
        "Attack",
        "Protect",
        "from",
        "through",
        "Active Defense",
        "Manipulate",
        "'s public voting power",
        "to",
        "by",
        "(~Phase)",
        "and",
        "or",
        "not",
        "is",
        "x2",
        "$total/2",
        "⇒",
        ",",
        "Odd: x1",
        "->Role",
        "#",
    ]);
    proptest!(proptest::test_runner::Config::with_cases(2000), |(parts in prop::collection::vec(words, 0..14))| {
        let text: String = parts.concat();
        if let Err(e) = parse_line(&text, 0, 1) {
            prop_assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{e} in {text:?}");
            prop_assert!(text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end));
        }
        if let Err(e) = parse_file(&format!("**X** | Townsfolk Power\n__Formalized__\n{text}\n")) {
            prop_assert!(e.span.end <= text.len() + 40);
        }
    });
}

/// A game of the example folder, played from its verbs: what `step` makes of a verb, applied.
struct Played {
    g: events::Game,
}

impl Played {
    fn new(dir: &str) -> Played {
        let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
            .expect("the example folder")
            .map(|e| e.expect("an entry").path())
            .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("an element file")))
            .collect();
        files.sort();
        Played::from_texts(&files)
    }

    fn from_texts(files: &[(String, String)]) -> Played {
        let c = compile_texts(files).unwrap_or_else(|e| panic!("{e:#?}"));
        let r = c.load().unwrap_or_else(|e| panic!("{e:#?}\n{}", c.files[1].1));
        let book = events::RuleBook::compile(std::sync::Arc::new(r)).unwrap_or_else(|e| panic!("{e:#?}"));
        Played { g: events::Game::new(std::sync::Arc::new(book)).expect("a game") }
    }

    fn step(&mut self, step: serde_json::Value) -> events::StepReport {
        use crate::creature::game::Step;
        let s = match game::step(&step).unwrap_or_else(|e| panic!("{step}: {e}")) {
            Step::Play(s) => s,
            Step::Generic(j) => {
                let c = &j["choose"];
                let picks = c["picks"]
                    .as_array()
                    .expect("picks")
                    .iter()
                    .map(|p| p.as_str().expect("a pick").to_owned());
                events::Step::Choose {
                    choice: c["choice"].as_u64().expect("a choice"),
                    picks: picks.collect(),
                }
            }
            other => panic!("{step}: {other:?}"),
        };
        self.g.apply(&s).unwrap_or_else(|e| panic!("{step}: {e}"))
    }

    fn value(&self, var: &str) -> String {
        match self.g.character().sheet().value(var) {
            Ok(Ok(v)) => v.to_string(),
            other => format!("{other:?}"),
        }
    }

    fn values(&self, vars: &[&str]) -> Vec<String> {
        vars.iter().map(|v| self.value(v)).collect()
    }
}

/// The example folder's game (`docs/examples/wwrf-game.json`), step by step: a day whose votes
/// are manipulated both ways, each manipulation in its place and gone when it ends; a night
/// where an attack on a protected player is evaded, a disguise fools one investigation and not
/// another, and a hermit absent at the victim's house is hit there.
// long: one game, asserted step by step.
#[test]
fn the_example_round_plays_as_the_guide_says() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/examples/wwrf");
    let game: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{dir}/../wwrf-game.json")).expect("the game file"),
    )
    .expect("JSON");
    let mut p = Played::new(dir);
    p.g.apply(&game::setup(&game["setup"]).expect("setup")).expect("set up");
    let steps = game["steps"].as_array().expect("steps").clone();
    let mut reports = Vec::new();
    let mut run = |p: &mut Played, range: std::ops::Range<usize>| {
        for s in &steps[range] {
            reports.push(p.step(s.clone()));
        }
    };
    // Day 1: the mayor's absolute 2; the fox disguised; the mayor's private 3, apart.
    run(&mut p, 0..1);
    assert_eq!(
        p.values(&["PHASE", "IS_NIGHT", "ann.PUBLIC_VOTES", "ann.PRIVATE_VOTES"]),
        ["2", "false", "2", "3"]
    );
    // The saboteur's relative -1 after it (1), the judge's special +1 after every public (2).
    run(&mut p, 1..3);
    assert_eq!(p.value("ann.PUBLIC_VOTES"), "1");
    run(&mut p, 3..5);
    assert_eq!(p.value("ann.PUBLIC_VOTES"), "2");
    // Ann votes with 2; the judge's vote is used up (~UntilUse): the one beneath shows again.
    run(&mut p, 5..7);
    assert_eq!(p.values(&["bob.VOTES", "ann.PUBLIC_VOTES", "eve.PUBLIC_VOTES"]), ["3", "1", "1"]);
    // The day ends: what lasted ~Phase goes; ann is back to her base 1 (private still 3).
    run(&mut p, 7..8);
    assert_eq!(
        p.values(&["PHASE", "IS_NIGHT", "ann.PUBLIC_VOTES", "ann.PRIVATE_VOTES"]),
        ["3", "true", "1", "3"]
    );
    // Night 2: the doctor protects eve, the wolf attacks her at the end of the night.
    run(&mut p, 8..12);
    assert_eq!(p.values(&["bob.ARMED_1", "eve.ALIVE"]), ["1", "1"]);
    // The fortune teller sees the fox's disguise (strong) by role, its class without.
    run(&mut p, 12..14);
    assert_eq!(p.value("fay.RESULT"), "Citizen");
    run(&mut p, 14..16);
    assert_eq!(p.value("fay.RESULT"), "Werewolf");
    // The hermit spends the night at eve's.
    run(&mut p, 16..18);
    // The night ends: eve's defense evades the attack at home; the hermit, absent there, is hit.
    run(&mut p, 18..19);
    assert_eq!(p.values(&["eve.ALIVE", "ivy.ALIVE", "ivy.DEATH", "LIVING"]), ["1", "0", "attack", "8"]);
    let last = reports.last().expect("a report");
    let fired: Vec<&str> = last.fired.iter().map(|f| &*f.rule).collect();
    assert!(fired.contains(&"a defense evades a hit") && fired.contains(&"a hit lands"), "{fired:?}");
    assert!(last.expired.iter().any(|e| e.what.id().contains("Doctor#1")), "{:?}", last.expired);
    assert_eq!(p.values(&["PHASE", "IS_NIGHT", "ann.PUBLIC_VOTES"]), ["4", "false", "2"]);
}

/// A game of the given element files, its players set up.
fn game_of(files: &[(&str, &str)], players: serde_json::Value) -> Played {
    let files: Vec<(String, String)> = files.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    let mut p = Played::from_texts(&files);
    p.g.apply(&game::setup(&serde_json::json!({ "players": players })).expect("setup")).expect("set up");
    p
}

/// A role file: the header and its ability lines.
fn role(header: &str, lines: &[&str]) -> String {
    format!("**{header}\n__Formalized__\n{}\n", lines.join("\n"))
}

fn execute(p: &mut Played, by: &str, line: usize, pick: Option<&str>) -> events::StepReport {
    let r = p.step(serde_json::json!({"execute": {"line": line, "by": by}}));
    match (pick, &r.pending) {
        (Some(pick), Some(q)) => {
            let s = serde_json::json!({"choose": {"choice": q.choice, "picks": [pick]}});
            p.step(s)
        }
        _ => r,
    }
}

/// Redirections send an ability to where they point (the oldest that matches its type); a
/// direct trigger is not redirected; a true kill goes through any defense; an `On Death`
/// trigger answers with `@Attacker`; a banishment leaves a ghost that a ghostly ability needs.
// long: one game, asserted step by step.
#[test]
fn redirections_true_kills_deaths_and_ghosts() {
    let decoy =
        role("Decoy** | Townsfolk Power", &["Start Night: Redirect `Killing` to @Selection (~Phase)"]);
    let wolf = role(
        "Wolf** | Werewolf Killing",
        &["Immediate Night: Attack @Selection", "Immediate Night {Direct}: Kill @Selection"],
    );
    let guard = role(
        "Guard** | Townsfolk Power",
        &["Start Night: Protect @Selection from `All` through Active Defense (~Phase)"],
    );
    let vig =
        role("Vigilante** | Townsfolk Killing", &["Immediate Night: True Kill @Selection [Quantity: 1]"]);
    let avenger = role("Avenger** | Townsfolk Killing", &["On Death: Kill @Attacker"]);
    let exorcist = role("Exorcist** | Townsfolk Power", &["Immediate Day: Banish @Selection"]);
    let ghost = role(
        "Spirit** | Townsfolk Miscellaneous",
        &["Immediate Day: Manipulate @Selection's public voting power by 1 (~Phase) [Status: Ghostly]"],
    );
    let files = [
        ("decoy.md", decoy.as_str()),
        ("wolf.md", wolf.as_str()),
        ("guard.md", guard.as_str()),
        ("vig.md", vig.as_str()),
        ("avenger.md", avenger.as_str()),
        ("exorcist.md", exorcist.as_str()),
        ("spirit.md", ghost.as_str()),
    ];
    let players = serde_json::json!({"dee": "Decoy", "wes": "Wolf", "gil": "Guard", "vic": "Vigilante",
        "ava": "Avenger", "exo": "Exorcist", "spi": "Spirit", "tom": "Guard", "wyn": "Wolf"});
    let mut p = game_of(&files, players);
    p.step(serde_json::json!({"start_phase": {"phase": "Night 1"}}));
    // The decoy sends killings aimed at them to tom; the guard protects tom.
    execute(&mut p, "dee", 1, Some("tom"));
    execute(&mut p, "gil", 1, Some("tom"));
    assert_eq!(p.value("Decoy#1.TO"), "tom");
    // The wolf attacks the decoy: redirected to tom, who is protected.
    execute(&mut p, "wes", 1, Some("dee"));
    assert_eq!(p.values(&["dee.ALIVE", "tom.ALIVE", "wes.SUCCESS"]), ["1", "1", "Failure"]);
    assert_eq!(p.value("Decoy#1.USES"), "1");
    // A direct kill is not redirected: the decoy dies.
    execute(&mut p, "wes", 2, Some("dee"));
    assert_eq!(p.values(&["dee.ALIVE", "dee.DEATH"]), ["0", "kill"]);
    // A true kill goes through tom's defense; once only (Quantity: 1).
    execute(&mut p, "vic", 1, Some("tom"));
    assert_eq!(p.values(&["tom.ALIVE", "tom.DEATH"]), ["0", "true kill"]);
    let r = execute(&mut p, "vic", 1, None);
    assert!(r.fired.is_empty() && r.pending.is_none(), "{:?}", r.fired);
    // One use a phase by default: the wolf's attack is spent.
    assert!(execute(&mut p, "wes", 1, None).fired.is_empty());
    // The avenger, killed by another wolf, kills their attacker (On Death, @Attacker).
    execute(&mut p, "wyn", 1, Some("ava"));
    assert_eq!(p.values(&["ava.ALIVE", "wyn.ALIVE", "wyn.DEATH"]), ["0", "0", "kill"]);
    // By day, a banished player is a ghost; a ghostly ability needs it.
    p.step(serde_json::json!({"advance_phase": {}}));
    let r = execute(&mut p, "spi", 1, None);
    assert!(r.fired.is_empty(), "alive, not ghostly: {:?}", r.fired);
    execute(&mut p, "exo", 1, Some("spi"));
    assert_eq!(p.values(&["spi.ALIVE", "spi.GHOST", "spi.DEATH"]), ["0", "1", "banish"]);
    execute(&mut p, "spi", 1, Some("exo"));
    assert_eq!(p.value("exo.PUBLIC_VOTES"), "2");
}

/// Restrictions as guards and scaling as counted uses: a temporal window, a quantity, no
/// succession, an attribute held, a condition; `x2` lets a prompt be answered twice a phase;
/// an automatic trigger scaled `x2` runs twice; `$living/2` rounds down.
// long: one game, asserted step by step.
#[test]
fn restrictions_and_scaling_at_play() {
    let seer = role(
        "Seer** | Townsfolk Investigative",
        &[
            "Start Night ⟨x2⟩: Role Investigate @Selection",
            "Start Night: Class Investigate @Selection [Temporal: Night 2+]",
            "Start Night: Alignment Investigate @Selection [Succession: No Succession]",
            "Start Night: Category Investigate @Selection [Condition: ($living > 3) and (@Self has `Blessed`)]",
        ],
    );
    let priest = role(
        "Priest** | Townsfolk Power",
        &[
            "Immediate Night: Add `Blessed` to @Selection (~NextPhase)",
            "Immediate Night: Remove `Blessed` from @Selection",
        ],
    );
    let counter = role(
        "Counter** | Townsfolk Miscellaneous",
        &[
            "Passive Start Night ⟨x2⟩: Manipulate @Self's private voting power by 1",
            "Passive Start Night ⟨$living/2⟩: Manipulate @Self's public voting power by 1",
        ],
    );
    let blessed = "**Blessed** | Attribute\n__Formalized__\nNo Abilities\n";
    let files = [
        ("seer.md", seer.as_str()),
        ("priest.md", priest.as_str()),
        ("counter.md", counter.as_str()),
        ("blessed.md", blessed),
    ];
    let players = serde_json::json!({"sam": "Seer", "pat": "Priest", "cal": "Counter", "ned": "Counter", "oli": "Counter"});
    let mut p = game_of(&files, players);
    p.step(serde_json::json!({"start_phase": {"phase": "Night 1"}}));
    // Automatic, scaled: x2 → private +2; 5 living / 2 → 2 (rounded down) → public +2.
    assert_eq!(p.values(&["cal.PRIVATE_VOTES", "cal.PUBLIC_VOTES"]), ["3", "3"]);
    // x2: answered twice this night, not a third time.
    for _ in 0..2 {
        let r = execute(&mut p, "sam", 1, Some("pat"));
        assert!(r.fired.iter().all(|f| f.error.is_none()), "{:?}", r.fired);
    }
    assert_eq!(p.value("sam.RESULT"), "Priest");
    assert!(execute(&mut p, "sam", 1, None).fired.is_empty());
    // Night 2+: not on night 1.
    assert!(execute(&mut p, "sam", 2, None).fired.is_empty());
    // No succession: night 1 yes.
    execute(&mut p, "sam", 3, Some("pat"));
    assert_eq!(p.value("sam.RESULT"), "Townsfolk");
    // The condition: living > 3 and blessed — not until the priest blesses the seer.
    assert!(execute(&mut p, "sam", 4, None).fired.is_empty());
    execute(&mut p, "pat", 1, Some("sam"));
    assert_eq!(p.value("sam.ATTR_BLESSED"), "1");
    execute(&mut p, "sam", 4, Some("cal"));
    assert_eq!(p.value("sam.RESULT"), "Miscellaneous");
    // Removed again: the condition fails.
    execute(&mut p, "pat", 2, Some("sam"));
    assert_eq!(p.value("sam.ATTR_BLESSED"), "0");
    // Night 2 (after day 1): x2 again; night 2+ now open; no succession refuses.
    p.step(serde_json::json!({"advance_phase": {}}));
    p.step(serde_json::json!({"advance_phase": {}}));
    assert_eq!(p.values(&["PHASE", "IS_NIGHT"]), ["3", "true"]);
    assert!(execute(&mut p, "sam", 3, None).fired.is_empty(), "not two nights in a row");
    execute(&mut p, "sam", 2, Some("cal"));
    assert_eq!(p.value("sam.RESULT"), "Townsfolk");
    let r = execute(&mut p, "sam", 1, Some("ned"));
    assert!(r.fired.iter().all(|f| f.error.is_none()), "{:?}", r.fired);
    assert_eq!(p.values(&["cal.PRIVATE_VOTES"]), ["5"]);
}

/// Names become formula names that load (`A-` → `A`; none ends in `_`); names that read alike
/// as one attribute counter are refused; `@Self` in a defense's `by` is its creator, in a
/// redirection's `from` its holder, in `On {Player} Death` the trigger's player.
#[test]
fn names_and_selves_compile_to_what_they_mean() {
    assert_eq!(write::ident("Fortune Teller"), "FORTUNE_TELLER");
    assert_eq!(write::ident("A-"), "A");
    assert_eq!(write::ident("--"), "X");
    let role = role(
        "Odd** | Townsfolk Power",
        &[
            "Start Night: Protect @Selection from `All` by @Others through Active Defense [Condition: @Self has `A-`]",
            "Start Night: Redirect `Killing` from @Others to @Selection",
            "On @Others Death: Untarget",
        ],
    );
    let c = compile_texts(&[("odd.md".to_owned(), role)]).unwrap_or_else(|e| panic!("{e:#?}"));
    c.load().unwrap_or_else(|e| panic!("{e:#?}\n{}", c.files[1].1));
    let text = &c.files[1].1;
    assert!(
        text.contains("(!(ATTACKER.ID == CREATOR))") || text.contains("ATTACKER.ID != CREATOR"),
        "{text}"
    );
    assert!(text.contains("ACTOR.ID != HOLDER"), "{text}");
    assert!(text.contains("DEAD.ID != ID"), "{text}");
    assert!(text.contains("ATTR_A > 0"), "{text}");
    let twins = [
        ("a.md".to_owned(), "**Mark-ed** | Attribute\n__Formalized__\nNo Abilities\n".to_owned()),
        ("b.md".to_owned(), "**Mark ed** | Attribute\n__Formalized__\nNo Abilities\n".to_owned()),
    ];
    let e = compile_texts(&twins).expect_err("one counter for two names");
    assert_eq!(e[0].code, data::DiagCode::Layer(write::codes::ELEMENT), "{e:#?}");
}

/// `~Attribute`: what an attribute's `Starting` gives its holder lasts as long as the attribute
/// — removed, or expired by its own duration, it goes, and the value beneath shows again.
#[test]
fn what_lasts_as_long_as_its_attribute() {
    let badge = "**Badge** | Attribute\n__Formalized__\nStarting: Manipulate @Self's public voting power by 1 (~Attribute)\n";
    let clerk = role(
        "Clerk** | Townsfolk Power",
        &[
            "Immediate Day: Add `Badge` to @Selection (~Phase)",
            "Immediate Day: Remove `Badge` from @Selection",
        ],
    );
    let files = [("badge.md", badge), ("clerk.md", clerk.as_str())];
    let mut p = game_of(&files, serde_json::json!({"cy": "Clerk", "di": "Clerk"}));
    p.step(serde_json::json!({"start_phase": {"phase": "Day 1"}}));
    execute(&mut p, "cy", 1, Some("di"));
    assert_eq!(p.values(&["di.PUBLIC_VOTES", "di.ATTR_BADGE"]), ["2", "1"]);
    execute(&mut p, "cy", 2, Some("di"));
    assert_eq!(p.values(&["di.PUBLIC_VOTES", "di.ATTR_BADGE"]), ["1", "0"]);
    execute(&mut p, "di", 1, Some("cy"));
    assert_eq!(p.value("cy.PUBLIC_VOTES"), "2");
    p.step(serde_json::json!({"advance_phase": {}}));
    assert_eq!(p.values(&["cy.PUBLIC_VOTES", "cy.ATTR_BADGE"]), ["1", "0"], "expired with the day");
    // Elsewhere `~Attribute` is refused, by name.
    let bad = "**Badge** | Attribute\n__Formalized__\nPassive Start Day: Manipulate @Self's public voting power by 1 (~Attribute)\n";
    let e = compile_texts(&[("badge.md".to_owned(), bad.to_owned())]).expect_err("refused");
    assert_eq!(e[0].code, data::DiagCode::Layer(write::codes::UNSUPPORTED), "{e:#?}");
}

/// The guide's Tanner and Disguised Fox (`docs/examples/wwrf/`): "for a Tanner both the role
/// and the player are user submitted, but for a Disguised Fox the player is always set to
/// themselves, whereas the role is user submitted". Investigations see what their levels let
/// them, for as long as the disguise lasts.
// long: one game, asserted step by step.
#[test]
fn the_tanner_and_the_disguised_fox() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/examples/wwrf");
    let mut p = Played::new(dir);
    let players = serde_json::json!({"tan": "Tanner", "fox": "Disguised Fox", "fay": "Fortune Teller", "eve": "Citizen"});
    p.g.apply(&game::setup(&serde_json::json!({ "players": players })).expect("setup")).expect("set up");
    p.step(serde_json::json!({"start_phase": {"phase": "Night 1"}}));
    // The fox: only the role is asked.
    let r = p.step(serde_json::json!({"execute": {"line": 1, "by": "fox"}}));
    let q = r.pending.expect("the role asked");
    assert!(q.options.iter().any(|o| &**o == "Doctor") && q.options.len() >= 10, "{:?}", q.options);
    p.step(serde_json::json!({"choose": {"choice": q.choice, "picks": ["Doctor"]}}));
    assert_eq!(p.values(&["fox.DS_ROLE", "fox.DS_CLASS"]), ["Doctor", "Townsfolk"]);
    // The tanner: the player, then the role.
    let r = p.step(serde_json::json!({"execute": {"line": 1, "by": "tan"}}));
    let q = r.pending.expect("the player asked");
    let r = p.step(serde_json::json!({"choose": {"choice": q.choice, "picks": ["eve"]}}));
    let q = r.pending.expect("the role asked");
    p.step(serde_json::json!({"choose": {"choice": q.choice, "picks": ["Werewolf"]}}));
    assert_eq!(p.values(&["eve.DW_ROLE", "eve.DW_ALIGNMENT"]), ["Werewolf", "Werewolf"]);
    // The fortune teller's role investigation (WD, SD) sees both; the class one neither.
    execute(&mut p, "fay", 1, Some("eve"));
    assert_eq!(p.value("fay.RESULT"), "Werewolf");
    execute(&mut p, "fay", 2, Some("fox"));
    assert_eq!(p.value("fay.RESULT"), "Werewolf", "the class, undisguised");
    // The night ends: the fox's (~Phase) goes; the tanner's lasts until the next day ends.
    p.step(serde_json::json!({"advance_phase": {}}));
    assert_eq!(p.values(&["fox.DS_ROLE", "eve.DW_ROLE"]), ["", "Werewolf"]);
    p.step(serde_json::json!({"advance_phase": {}}));
    assert_eq!(p.value("eve.DW_ROLE"), "");
}

/// Visits and actions: an ability visits its target (`On Visited`, filtered by type), unless
/// its trigger is visitless; every ability run is an action (`On Action` for the acting role,
/// `On {Player} Action` for whoever matches), with `@Visitor` and the filters' types.
// long: one game, asserted step by step.
#[test]
fn visits_and_actions_trigger_what_listens() {
    let trapper = role("Trapper** | Townsfolk Power", &["On Visited [Killing]: Kill @Visitor"]);
    let gossip = role(
        "Gossip** | Townsfolk Miscellaneous",
        &["On Visited [!Killing]: Manipulate @Self's public voting power by 1"],
    );
    let hunter = role(
        "Hunter** | Townsfolk Killing",
        &[
            "Immediate Night: Attack @Selection",
            "On Action [Attack Killing]: Manipulate @Self's private voting power by 1",
        ],
    );
    let shade = role("Shade** | Werewolf Killing", &["Immediate Night {Visitless}: Attack @Selection"]);
    let seer = role("Seer** | Townsfolk Investigative", &["Immediate Night: Role Investigate @Selection"]);
    let spy = role(
        "Spy** | Townsfolk Investigative",
        &["On @(Role:Seer) Action [Investigating]: Manipulate @Self's public voting power by 2"],
    );
    let files = [
        ("trapper.md", trapper.as_str()),
        ("gossip.md", gossip.as_str()),
        ("hunter.md", hunter.as_str()),
        ("shade.md", shade.as_str()),
        ("seer.md", seer.as_str()),
        ("spy.md", spy.as_str()),
    ];
    let players = serde_json::json!({"tra": "Trapper", "trb": "Trapper", "gos": "Gossip", "hun": "Hunter",
        "sha": "Shade", "see": "Seer", "spy": "Spy"});
    let mut p = game_of(&files, players);
    p.step(serde_json::json!({"start_phase": {"phase": "Night 1"}}));
    // The hunter attacks a trapper: the visit springs the trap on the hunter; both die; the
    // hunter's own attack counted as an action of theirs first.
    execute(&mut p, "hun", 1, Some("tra"));
    assert_eq!(
        p.values(&["tra.ALIVE", "hun.ALIVE", "hun.DEATH", "hun.PRIVATE_VOTES"]),
        ["0", "0", "kill", "2"]
    );
    // A visitless attack springs nothing.
    execute(&mut p, "sha", 1, Some("trb"));
    assert_eq!(p.values(&["trb.ALIVE", "sha.ALIVE"]), ["0", "1"]);
    // An investigation is a visit that is no killing (the gossip gains), and an action of a
    // seer (the spy gains).
    execute(&mut p, "see", 1, Some("gos"));
    assert_eq!(p.values(&["see.RESULT", "gos.PUBLIC_VOTES", "spy.PUBLIC_VOTES"]), ["Gossip", "2", "3"]);
}

/// `Passive` runs whenever something significant changes — the game starting, a phase
/// beginning, a death — with its condition read then (once a phase unless scaled).
#[test]
fn passive_lines_run_when_something_changes() {
    let avenger = role(
        "Mourner** | Townsfolk Miscellaneous",
        &["Passive: Manipulate @Self's private voting power by 1 [Condition: $living < 3]"],
    );
    let wolf = role("Wolf** | Werewolf Killing", &["Immediate Night: Kill @Selection"]);
    let files = [("mourner.md", avenger.as_str()), ("wolf.md", wolf.as_str())];
    let mut p = game_of(&files, serde_json::json!({"mo": "Mourner", "wa": "Wolf", "wb": "Wolf"}));
    p.step(serde_json::json!({"start_phase": {"phase": "Night 1"}}));
    assert_eq!(p.value("mo.PRIVATE_VOTES"), "1", "three living: the condition fails");
    // A death is a change: two living now, the condition holds.
    execute(&mut p, "wa", 1, Some("wb"));
    assert_eq!(p.values(&["LIVING", "mo.PRIVATE_VOTES"]), ["2", "2"]);
    // A phase beginning is one too.
    p.step(serde_json::json!({"advance_phase": {}}));
    assert_eq!(p.value("mo.PRIVATE_VOTES"), "3");
}
