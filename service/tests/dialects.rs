//! The dialects end to end, run as a user would: `sheetd check --dialect`, `sheetd translate`
//! and `sheetd solve --ruleset D:PATH` on the creature features example
//! (`docs/examples/creature/`, `docs/examples/creature-game.json`).

use serde_json::{Value as Json, json};
use std::path::Path;
use std::process::{Command, Output};

fn sheetd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sheetd")).args(args).env("NO_COLOR", "1").output().expect("sheetd runs")
}

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path).display().to_string()
}

fn json_lines(out: &Output) -> Vec<Json> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

fn changed(line: &Json, var: &str) -> Option<(Json, Json)> {
    line["changed"].as_array()?.iter().find(|c| c["var"] == var).map(|c| (c["old"].clone(), c["new"].clone()))
}

fn fired(line: &Json) -> Vec<String> {
    line["fired"]
        .as_array()
        .map_or(Vec::new(), |f| f.iter().map(|x| x["rule"].as_str().unwrap_or("").to_owned()).collect())
}

fn game(ruleset: &str) -> Output {
    play(ruleset, "docs/examples/creature-game.json")
}

fn play(ruleset: &str, game: &str) -> Output {
    sheetd(&["solve", "--ruleset", ruleset, "--sheet", &repo(game), "--json"])
}

/// The seed's examples through a game: the deva's TEXT renders exactly as the seed shows, the
/// save DC is 8 + INT + PROF, breath-hold follows CON, carry capacity is the seed's formula;
/// hits, reductions, recharges, durations and rests do what the features say.
#[test]
fn the_deva_game_plays_as_its_features_say() {
    let out = game(&format!("creature:{}", repo("docs/examples/creature")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The effect the seed marks under construction loads with a warning naming it.
    assert!(stderr.contains("creature.under_construction") && stderr.contains("Plane shift"), "{stderr}");
    let l = json_lines(&out);
    // A dialect's game prints every key on every step line.
    for line in &l[..l.len() - 1] {
        for k in ["step", "changed", "expired", "fired", "pending", "error"] {
            assert!(line.get(k).is_some(), "{k} missing: {line}");
        }
    }
    // *TEXT*: "when applied to a "deva" with runtime variables (4, 8), we get: …"
    assert_eq!(
        l[0]["value"],
        "The deva's weapon attacks are magical. When the deva hits with any weapon, the weapon deals an extra 4d8 radiant damage."
    );
    // *Variables*: "to set a save DC equal to 8+int+prof: (8,INT,PROF,+,+)" (INT 3, PROF 4).
    assert_eq!((&l[1]["value"], &l[2]["value"]), (&json!("15"), &json!("15")));
    // "to set breath time to max(.5, 1+CON): (1,CON,+,.5,max)": the ogre's CON 3, then -2.
    assert_eq!(l[3]["value"], "4");
    assert_eq!(changed(&l[4], "ogre.CON"), Some((json!("3"), json!("-2"))));
    assert_eq!(l[5]["value"], "0.5");
    // CARRY_CAPACITY for a Medium (SIZE 5) creature: 2^0 × 15 × STR 4.
    assert_eq!(l[6]["value"], "60");
    // The ogre attacks the deva: Parry (once a turn) reduces incoming damage by 3 …
    assert_eq!(fired(&l[7]), ["deva: Parry #1", "deva: Parry #1 effect 1"]);
    assert_eq!(changed(&l[7], "deva.DAMAGE_REDUCTION"), Some((json!("0"), json!("3"))));
    // … so its hit of 10 takes 7.
    assert_eq!(changed(&l[8], "deva.HP"), Some((json!("136"), json!("129"))));
    assert_eq!(changed(&l[8], "deva.ADVANTAGE_GRANTED"), Some((json!("0"), json!("1"))));
    assert_eq!(changed(&l[9], "deva.FLYING"), None);
    // "End of turn": the reduction ends with the deva's turn.
    assert_eq!(changed(&l[9], "deva.DAMAGE_REDUCTION"), Some((json!("3"), json!("0"))));
    assert_eq!(l[9]["expired"][0]["clock"], "deva.TURN_ENDS");
    // The deva hits the ogre for 12, and Angelic Weapons adds 4d8's average, 18.
    assert_eq!(changed(&l[10], "ogre.HP"), Some((json!("59"), json!("29"))));
    assert_eq!(fired(&l[10])[1..], ["deva: Angelic Weapons #1", "deva: Angelic Weapons #1 effect 1"]);
    // Fury: at its turn's start the ogre stores its HP in NV1; under half its MAXHP, berserk.
    assert_eq!(changed(&l[11], "ogre.Fury.NV1"), Some((json!("0"), json!("29"))));
    assert_eq!(changed(&l[11], "ogre.BERSERK"), Some((json!("0"), json!("1"))));
    // Healing Touch: regain 20 (3 uses a long rest).
    assert_eq!(changed(&l[12], "ogre.HP"), Some((json!("29"), json!("49"))));
    assert_eq!(changed(&l[12], "deva.Healing_Touch_1.USES"), Some((json!("3"), json!("2"))));
    // Blinding Flash: disadvantage on attack rolls until the end of the target's next turn;
    // used up, a second use does nothing; a roll of 5 recharges it (5-6).
    assert_eq!(changed(&l[13], "ogre.DISADVANTAGE_ON_ATTACK_ROLLS"), Some((json!("0"), json!("1"))));
    assert_eq!(fired(&l[14]), Vec::<String>::new());
    assert_eq!(changed(&l[15], "deva.Blinding_Flash_1.USES"), Some((json!("0"), json!("1"))));
    assert_eq!(changed(&l[16], "ogre.DISADVANTAGE_ON_ATTACK_ROLLS"), Some((json!("1"), json!("0"))));
    // "1 min" of berserk: over after 61 seconds, not 60.
    assert_eq!(changed(&l[17], "ogre.BERSERK"), None);
    assert_eq!(changed(&l[18], "ogre.BERSERK"), Some((json!("1"), json!("0"))));
    // A long rest refills Healing Touch.
    assert_eq!(changed(&l[19], "deva.Healing_Touch_1.USES"), Some((json!("2"), json!("3"))));
    // A rejected step is reported, and the exit status is still 0.
    assert_eq!(l[20]["error"]["code"], "events.bad_args", "{}", l[20]);
    // Watchful reads the ogre by its name: at 49 HP (< 50) the deva flies at its turn's end
    // (at step 9 the ogre had 59: no) until the start of its next turn, when Vengeful Spirit's
    // advantage (from step 8, when it was damaged) ends too.
    assert_eq!(changed(&l[21], "deva.FLYING"), Some((json!("0"), json!("1"))));
    assert_eq!(changed(&l[22], "deva.FLYING"), Some((json!("1"), json!("0"))));
    assert_eq!(changed(&l[22], "deva.ADVANTAGE_GRANTED"), Some((json!("1"), json!("0"))));
    assert_eq!(l[22]["expired"].as_array().map(Vec::len), Some(2));
    assert_eq!(l[23]["values"]["ogre.HP"], "49");
}

/// What the creature files become, written out, loads back with `sheetd check` and plays the
/// same game with the same results.
#[test]
fn the_translation_checks_and_plays_the_same_game() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("deva");
    let out_dir = out_dir.to_str().expect("a UTF-8 path");
    let t =
        sheetd(&["translate", "--dialect", "creature", &repo("docs/examples/creature"), "--out", out_dir]);
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let check = sheetd(&["check", out_dir]);
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success() && report.contains("rules           22"), "{report}");
    let dialect = sheetd(&["check", "--dialect", "creature", &repo("docs/examples/creature")]);
    let dialect_report = String::from_utf8_lossy(&dialect.stdout);
    assert!(dialect_report.contains("features         8") && dialect_report.contains("clocks           3"));
    // The same counts (after the dialect's own two lines).
    let counts = |r: &str| {
        r.lines()
            .skip(1)
            .filter(|l| !l.contains("features") && !l.contains("creatures"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(counts(&report), counts(&dialect_report));
    // The same game: every step and value alike, but where the rules are written.
    let strip = |out: &Output| {
        let text = String::from_utf8_lossy(&out.stdout).replace(&format!("{out_dir}/"), "");
        text.lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let native = game(out_dir);
    let own = game(&format!("creature:{}", repo("docs/examples/creature")));
    assert!(native.status.success());
    assert_eq!(strip(&native), strip(&own));
    // Without --out the files are printed.
    let printed = sheetd(&["translate", "--dialect", "creature", &repo("docs/examples/creature")]);
    let text = String::from_utf8_lossy(&printed.stdout);
    assert!(text.contains("# file: 00-prelude.toml") && text.contains("name = \"deva: Parry #1\""), "{text}");
}

/// A bad feature file is refused by check, translate and solve alike, each error at
/// file:line:col inside the JSON, a postfix error at its token.
#[test]
fn bad_creature_files_are_refused_at_their_text() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = dir.path().join("f.json");
    std::fs::write(
        &f,
        "{\"name\": \"F\",\n \"subfeatures\": [{\"trigger\": \"passive\",\n  \"effects\": [{\"effect\": [\"Set N = N\", \"SPELLDC\", \"(8,INT,PROF)\"]}]}]}\n",
    )
    .expect("write");
    let path = f.to_str().expect("UTF-8");
    for args in [
        vec!["check", "--dialect", "creature", path],
        vec!["translate", "--dialect", "creature", path],
        vec![
            "solve",
            "--ruleset",
            &format!("creature:{path}"),
            "--sheet",
            &repo("docs/examples/creature-game.json"),
        ],
    ] {
        let out = sheetd(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("postfix.leftover") && err.contains("f.json:3:53"), "{args:?}: {err}");
    }
    // An unknown dialect is a usage error.
    let out = sheetd(&["check", "--dialect", "klingon", path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("unknown dialect `klingon` (known: creature, rulescript, effects, wwrf)")
    );
    // A game file that is not valid: exit 1.
    let g = dir.path().join("g.json");
    std::fs::write(&g, r#"{"dialect": "creature", "setup": {"monsters": []}, "steps": []}"#).expect("write");
    let out = sheetd(&[
        "solve",
        "--ruleset",
        &format!("creature:{}", repo("docs/examples/creature")),
        "--sheet",
        g.to_str().expect("UTF-8"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown key `monsters` in `setup`"));
}

/// RuleScript cards through a game: effects in the order written (`bp(+200) & bp(x2)` on 300
/// is 1000), a cost that cannot be paid, a target chosen (an option not offered refused),
/// `[[if]]` and `[[else]]`, `all … in`, abilities added until a turn's end, restrictions
/// expiring on the turn clocks.
#[test]
fn the_rulescript_game_plays_as_its_cards_say() {
    let out = play(
        &format!("rulescript:{}", repo("docs/examples/rulescript")),
        "docs/examples/rulescript-game.json",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let l = json_lines(&out);
    // *Action Statement*, the issue's own: `{F}: bp(+200) & bp(x2)` on 300 gives 1000, and
    // the card is frozen to pay.
    assert_eq!(changed(&l[1], "w1.BP"), Some((json!("300"), json!("1000"))));
    assert_eq!(changed(&l[1], "w1.FROZEN"), Some((json!("0"), json!("1"))));
    // Frozen, the cost {F} cannot be paid: the firing is refused with the guard's code.
    assert_eq!(l[2]["fired"][0]["error"]["code"], "solver.guard_failed", "{}", l[2]);
    assert_eq!(changed(&l[2], "w1.BP"), None);
    // The target is asked: only the opponent's characters in the ring are offered.
    assert_eq!(l[4]["pending"]["options"], json!(["g1"]), "{}", l[4]);
    assert_eq!(l[5]["error"]["code"], "events.bad_pick", "{}", l[5]);
    // damage(300) to a character lowers its BP; +frosted lasts until the opponent's turn ends.
    assert_eq!(changed(&l[6], "g1.BP"), Some((json!("200"), json!("-100"))));
    assert_eq!(changed(&l[6], "g1.FROSTED"), Some((json!("0"), json!("1"))));
    // [[if me.sp < opp.sp]] sp(+1) [[else]] hp(+500): 2 < 4, 3 < 4, then 4 is not.
    assert_eq!(changed(&l[8], "me.SP"), Some((json!("2"), json!("3"))));
    assert_eq!(changed(&l[9], "me.SP"), Some((json!("3"), json!("4"))));
    assert_eq!(changed(&l[10], "me.HP"), Some((json!("3000"), json!("3500"))));
    // [[if all card.bp <= 300 in me.ring]]: the warrior has 1000, so nothing is drawn.
    assert_eq!(changed(&l[12], "me.HAND"), None);
    assert_eq!(l[12]["fired"], json!([]), "{}", l[12]);
    // +cantplayac to(opp) uynt; {D}: bp(=1000) ueot pays a card from the hand.
    assert_eq!(changed(&l[14], "opp.CANTPLAYAC"), Some((json!("0"), json!("1"))));
    assert_eq!(changed(&l[16], "me.HAND"), Some((json!("5"), json!("4"))));
    assert_eq!(changed(&l[16], "s1.BP"), Some((json!("400"), json!("1000"))));
    // ueot: the end of my turn; oppUeot: the end of the opponent's; uynt: my next turn.
    assert_eq!(changed(&l[17], "s1.BP"), Some((json!("1000"), json!("400"))));
    assert_eq!(changed(&l[19], "g1.FROSTED"), Some((json!("1"), json!("0"))));
    assert_eq!(changed(&l[20], "opp.CANTPLAYAC"), Some((json!("1"), json!("0"))));
    // *RuleScript*, the opening example: {F} paid, the coin flipped (a roll step: sheetd draws
    // no randomness), heads, the target asked among the characters, bp(+500) on it.
    assert_eq!(l[21]["pending"]["die"], "d2", "{}", l[21]);
    assert_eq!(changed(&l[22], "c1.VAR_coin"), Some((json!("0"), json!("2"))));
    assert_eq!(l[22]["pending"]["choice"], 3, "{}", l[22]);
    assert_eq!(changed(&l[23], "c1.BP"), Some((json!("300"), json!("800"))));
    // *Variables Property*: `_cards := getTargets('*s@myDiscards')` counts a card put there.
    assert_eq!(changed(&l[26], "t1.BP"), Some((json!("200"), json!("700"))));
    // [[may 'Draw a card?']]: yes draws; declined, nothing happens.
    assert_eq!(changed(&l[29], "me.HAND"), Some((json!("4"), json!("5"))));
    assert!(l[31]["changed"].as_array().is_some_and(Vec::is_empty), "{}", l[31]);
    // *Auto Statement*: ~myDrawPhase~ draws; ~oppEndPhase:once~ destroys the chosen character,
    // once; ~powerless,backedUp~ (of this card, by default) damages the player.
    assert_eq!(changed(&l[32], "me.HAND"), Some((json!("5"), json!("6"))));
    assert_eq!(changed(&l[34], "g1.ZONE"), Some((json!("ring"), json!("discards"))));
    assert_eq!(l[35]["fired"], json!([]), "{}", l[35]);
    assert_eq!(changed(&l[36], "me.HP"), Some((json!("3500"), json!("3400"))));
    assert_eq!(l[37]["fired"], json!([]), "{}", l[37]);
    // A `.rulescript` file's card (berserker.rulescript): bp(+300) until the end of my turn.
    assert_eq!(changed(&l[38], "b1.BP"), Some((json!("500"), json!("800"))));
    assert_eq!(changed(&l[39], "b1.BP"), Some((json!("800"), json!("500"))));
    // *Requisite Property*: no character of the opponent's is left in the ring: refused.
    assert_eq!(l[40]["fired"][0]["error"]["code"], "solver.guard_failed", "{}", l[40]);
    // *effect*: `draw(); draw() target(opp)`: both players draw.
    assert_eq!(changed(&l[41], "me.HAND"), Some((json!("6"), json!("7"))));
    assert_eq!(changed(&l[41], "opp.HAND"), Some((json!("5"), json!("6"))));
    // *to(target filter)*: one of mine destroyed; none of the opponent's to pick.
    assert_eq!(l[43]["pending"]["options"], json!([]), "{}", l[43]);
    assert_eq!(changed(&l[44], "m1.ZONE"), Some((json!("ring"), json!("discards"))));
    // `moveTo(deck) from?(*s@hand)`: the cards of my hand (`*s`: all of them, no question) back
    // to the deck; `from?`: with none there, the action still runs, and moves nothing.
    assert_eq!(l[46]["pending"], Json::Null, "{}", l[46]);
    assert_eq!(changed(&l[46], "b1.ZONE"), Some((json!("hand"), json!("deck"))));
    assert!(fired(&l[47]).contains(&"Recall: action 1.1".to_owned()), "{}", l[47]);
    assert!(l[47]["changed"].as_array().is_some_and(Vec::is_empty) && l[47]["error"].is_null(), "{}", l[47]);
    // *effect*: `&` runs the next effect after a failure; `&&` stops there.
    let codes = |l: &Json| -> Vec<Json> {
        l["fired"].as_array().map_or(Vec::new(), |f| f.iter().map(|x| x["error"]["code"].clone()).collect())
    };
    assert_eq!(codes(&l[48]), [Json::Null, json!("solver.out_of_bounds"), Json::Null]);
    assert_eq!(changed(&l[48], "me.SP"), Some((json!("4"), json!("5"))));
    assert_eq!(codes(&l[49]), [Json::Null, json!("solver.out_of_bounds")]);
    assert_eq!(changed(&l[49], "me.SP"), None);
    // `||`: the right effect when the left failed (no 99 cards to draw), not when it did not.
    assert_eq!(changed(&l[50], "me.SP"), Some((json!("5"), json!("6"))));
    assert_eq!(changed(&l[51], "me.HAND"), Some((json!("7"), json!("8"))));
    assert_eq!(changed(&l[51], "me.SP"), None);
    // An always-active auto statement: bp(+100) & +unblockable while in the ring.
    assert_eq!(changed(&l[52], "sb1.BP"), Some((json!("400"), json!("300"))));
    assert_eq!(changed(&l[52], "sb1.UNBLOCKABLE"), Some((json!("1"), json!("0"))));
    // *Auto Statement* suffixes: `~attacks:any:char~` fires for any character, not an action.
    assert_eq!(changed(&l[53], "me.SP"), Some((json!("6"), json!("7"))));
    assert_eq!(changed(&l[54], "me.SP"), None);
    assert_eq!(fired(&l[54]), ["a card attacks"], "{}", l[54]);
    assert_eq!(changed(&l[54], "st1.ATTACKING"), Some((json!("0"), json!("1"))));
    // *effect*: `discard(character) || destroy()`: a character of my hand is asked for and
    // discarded; with none left, the card itself is.
    assert_eq!(l[58]["pending"]["options"], json!(["hx1"]), "{}", l[58]);
    assert_eq!(changed(&l[59], "hx1.ZONE"), Some((json!("hand"), json!("discards"))));
    assert_eq!(changed(&l[60], "hm1.ZONE"), Some((json!("ring"), json!("discards"))));
    assert!(fired(&l[60]).contains(&"Hermit: action 1.1 effect 1 fails".to_owned()), "{}", l[60]);
    // *effect*: `prophecy(3, top) & shuffle?(deck)`: the player looks at the top 3 cards
    // (the deck is a count: which cards is the front end's), then is asked whether to shuffle.
    assert_eq!(l[62]["pending"]["options"], json!(["done"]), "{}", l[62]);
    assert!(l[62]["pending"]["prompt"].as_str().is_some_and(|p| p.contains("top 3 card(s) of your deck")));
    assert_eq!(
        (l[63]["pending"]["prompt"].clone(), l[63]["pending"]["decline"].clone()),
        (json!("Oracle: shuffle(deck)?"), json!(true))
    );
    assert_eq!(changed(&l[64], "me.SHUFFLES"), Some((json!("0"), json!("1"))));
    assert_eq!(changed(&l[67], "me.SHUFFLES"), None, "declined: {}", l[67]);
    // *?hook?*: `?oppCanBlock:this? [[if opp.ring.size > 1]]`: unblockable while the opponent
    // has two characters in the ring, not one.
    assert_eq!(changed(&l[68], "gk1.UNBLOCKABLE"), None);
    assert_eq!(changed(&l[69], "gk1.UNBLOCKABLE"), None);
    assert_eq!(changed(&l[70], "gk1.UNBLOCKABLE"), Some((json!("0"), json!("1"))));
    assert_eq!(changed(&l[71], "gk1.UNBLOCKABLE"), Some((json!("1"), json!("0"))));
    // *Commenting*: `trash(5) # …` trashes 5 (the commented target is no target);
    // *Label Property*: the second action is `trash(2)`.
    assert_eq!(changed(&l[72], "me.DECK"), Some((json!("26"), json!("21"))));
    assert_eq!(changed(&l[73], "me.DISCARDS"), Some((json!("6"), json!("8"))));
    // *<qty>*: `<2>action@oppDiscards`: two of the opponent's discarded action cards.
    assert_eq!(l[76]["pending"]["options"], json!(["oa1", "oa2"]), "{}", l[76]);
    assert_eq!(l[76]["pending"]["pick"], 2, "{}", l[76]);
    assert_eq!(changed(&l[77], "oa1.ZONE"), Some((json!("discards"), json!("hand"))));
    assert_eq!(changed(&l[77], "oa2.ZONE"), Some((json!("discards"), json!("hand"))));
    // *Target Filter statement* examples: `players` (both players heal); one character in my
    // ring and one in the opponent's (two questions, the effect on each); `!"Emulate"[action]`
    // (an action card not named Emulate); `character&warrior` (only the warrior);
    // `characters[bp<=400]@ring` (all of mine with BP 400 or less, no question).
    assert_eq!(changed(&l[78], "me.HP"), Some((json!("3400"), json!("3500"))));
    assert_eq!(changed(&l[78], "opp.HP"), Some((json!("3000"), json!("3100"))));
    assert_eq!(l[80]["pending"]["options"], json!(["og1"]), "{}", l[80]);
    assert_eq!(changed(&l[81], "gk1.BP"), Some((json!("300"), json!("200"))));
    assert_eq!(changed(&l[81], "og1.BP"), Some((json!("200"), json!("100"))));
    assert_eq!(
        l[84]["pending"]["options"],
        json!(["oa3"]),
        "Emulate and the Goblin are not offered: {}",
        l[84]
    );
    assert_eq!(changed(&l[85], "oa3.ZONE"), Some((json!("discards"), json!("hand"))));
    assert_eq!(l[86]["pending"]["options"], json!(["w1"]), "{}", l[86]);
    assert_eq!(changed(&l[87], "w1.BP"), Some((json!("1000"), json!("1100"))));
    assert_eq!(l[88]["pending"], Json::Null, "{}", l[88]);
    let raised: Vec<String> = l[88]["changed"].as_array().map_or(Vec::new(), |c| {
        c.iter().filter_map(|x| x["var"].as_str()).filter(|v| v.ends_with(".BP")).map(str::to_owned).collect()
    });
    assert_eq!(raised, ["gk1.BP", "l1.BP", "n1.BP", "s1.BP", "sb1.BP", "wm1.BP"]);
    // `draw(99) & sp(+1) && hp(+1)`: the draw fails, `&` runs sp(+1) anyway, and `&&` hp(+1)
    // since sp(+1) succeeded; `draw(99) || sp(+1) && hp(+1)`: sp(+1) because the draw failed,
    // then hp(+1).
    assert_eq!(
        codes(&l[89]),
        [Json::Null, json!("solver.out_of_bounds"), Json::Null, Json::Null, Json::Null]
    );
    assert_eq!(changed(&l[89], "me.SP"), Some((json!("7"), json!("8"))));
    assert_eq!(changed(&l[89], "me.HP"), Some((json!("3500"), json!("3501"))));
    assert_eq!(changed(&l[90], "me.SP"), Some((json!("8"), json!("9"))));
    assert_eq!(changed(&l[90], "me.HP"), Some((json!("3501"), json!("3502"))));
    // *[filter]*: `*s[backedup & attack, -frozen]`: the warrior (frozen, but backed up and
    // attacking) and every card not frozen; not the frozen c1 and t1.
    assert_eq!(changed(&l[91], "w1.BACKEDUP"), Some((json!("0"), json!("1"))));
    assert_eq!(changed(&l[92], "w1.BP"), Some((json!("1100"), json!("1200"))));
    assert_eq!(changed(&l[92], "gk1.BP"), Some((json!("300"), json!("400"))));
    assert_eq!((changed(&l[92], "c1.BP"), changed(&l[92], "t1.BP")), (None, None));
    // *<pick>*, the pile's order being the cards' POSITION (em2 0, pz1 1, dk1 2, b1 3, dk3 4;
    // the opponent's dk2 5): `character<1>[powerful]@anyDeck` takes dk1 (the Peasant on top of
    // it has no rules); `character<1>@anyDeck` the Peasant; `*s<-2>@deck` the bottom two of mine.
    assert_eq!(changed(&l[93], "pz1.POSITION"), Some((json!("0"), json!("1"))));
    assert_eq!(changed(&l[99], "dk1.ZONE"), Some((json!("deck"), json!("hand"))));
    assert_eq!(changed(&l[100], "pz1.ZONE"), Some((json!("deck"), json!("hand"))));
    let discarded: Vec<&str> = l[101]["changed"].as_array().map_or(Vec::new(), |c| {
        c.iter().filter_map(|x| x["var"].as_str()).filter(|v| v.ends_with(".ZONE")).collect()
    });
    assert_eq!(discarded, ["b1.ZONE", "dk3.ZONE"]);
    assert_eq!(l[102]["values"]["w1.BP"], "1200");
    assert_eq!(l[102]["values"]["b1.RUSH"], "1");
    // The translation plays the same game.
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("cards");
    let out_dir = out_dir.to_str().expect("a UTF-8 path");
    let t = sheetd(&[
        "translate",
        "--dialect",
        "rulescript",
        &repo("docs/examples/rulescript"),
        "--out",
        out_dir,
    ]);
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    assert!(sheetd(&["check", out_dir]).status.success());
    let native = play(out_dir, "docs/examples/rulescript-game.json");
    let strip = |o: &Output| String::from_utf8_lossy(&o.stdout).replace(&format!("{out_dir}/"), "");
    assert_eq!(strip(&native), strip(&out));
}

/// Bad cards are refused at their text inside the JSON, each with its code: an unknown
/// command, Python outside the subset, a restriction on effects that do not last, and what
/// sheetd's RuleScript does not run yet.
#[test]
fn bad_cards_are_refused_at_their_text() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = [
        ("action = fly(2)", "rulescript.unknown_command", "fly"),
        ("action = [[if len(me.hand) > 2]] draw()", "rulescript.python", "len"),
        ("action = damage(300) ueot", "rulescript.restriction", "ueot"),
        ("auto = draw()", "rulescript.unsupported", "draw"),
        ("action = steal()", "rulescript.unsupported", "steal"),
        ("action = discard(opp)", "rulescript.unsupported", "discard"),
    ];
    for (rule, code, at) in cases {
        let f = dir.path().join("cards.json");
        let text = format!(
            "[{{\"name\": \"X\", \"type\": \"character\", \"bp\": 100,\n  \"rules\": [\"{rule}\"]}}]"
        );
        std::fs::write(&f, &text).expect("write");
        let out = sheetd(&["check", "--dialect", "rulescript", f.to_str().expect("UTF-8")]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{rule}: {err}");
        // file:line:col inside the rules' line in the JSON.
        let col = text.lines().nth(1).and_then(|l| l.find(at)).map(|c| c + 1).expect("the text");
        assert!(err.contains(code) && err.contains(&format!("cards.json:2:{col}")), "{rule}: {err}");
    }
}

/// Effect strings end to end (`docs/examples/effects/`, every card of the document;
/// `docs/examples/effects-game.json`): payouts counted when paid, a `choose` answered, an
/// exchange refused whole while its cost cannot be paid, a citizen picked by a filter (a pick
/// not offered refused), monsters slain counted; domains bought (one already owned refused), an
/// optional conversion accepted, a harvest passive for its owner, a die set in the roll phase
/// (refused while unpaid), end-of-action payments to and from another player, a flag, the
/// opaque keys; the translation plays the same game.
#[test]
// long: one game, step by step.
fn the_effects_game_plays_as_its_strings_say() {
    let tables = [repo("docs/examples/effects")];
    let args = |rulesets: &[String]| -> Output {
        let mut a: Vec<String> = vec!["solve".to_owned()];
        for r in rulesets {
            a.extend(["--ruleset".to_owned(), r.clone()]);
        }
        a.extend(["--sheet".to_owned(), repo("docs/examples/effects-game.json"), "--json".to_owned()]);
        sheetd(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let out = args(&tables.iter().map(|t| format!("effects:{t}")).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let l = json_lines(&out);
    // `count owned_worker g 2` with two workers owned.
    assert_eq!(changed(&l[1], "p1.OWNED_WORKER"), Some((json!("1"), json!("2"))));
    assert_eq!(changed(&l[2], "p1.G"), Some((json!("0"), json!("4"))));
    // `choose g 2 m 2`: asked, m 2 chosen.
    assert_eq!(l[3]["pending"]["options"], json!(["g 2", "m 2"]), "{}", l[3]);
    assert_eq!(changed(&l[4], "p1.M"), Some((json!("0"), json!("2"))));
    // `exchange s 1 g 2` with no s: refused whole; with one, paid.
    assert_eq!(l[5]["fired"][1]["error"]["code"], "solver.out_of_bounds", "{}", l[5]);
    assert_eq!(changed(&l[5], "p1.G"), None);
    assert_eq!(changed(&l[7], "p1.S"), Some((json!("1"), json!("0"))));
    assert_eq!(changed(&l[7], "p1.G"), Some((json!("4"), json!("6"))));
    // `choose <citizens where gold_cost<=2>`: the Champion (3) is not offered.
    assert_eq!(l[9]["pending"]["options"], json!(["knight", "mercenary"]), "{}", l[9]);
    assert_eq!(l[10]["error"]["code"], "events.bad_pick", "{}", l[10]);
    assert_eq!(changed(&l[11], "knight.OWNER"), Some((json!(""), json!("p1"))));
    // `count area Hills g 1` with two Hills monsters slain.
    assert_eq!(changed(&l[14], "p1.G"), Some((json!("6"), json!("8"))));
    // Wisborg bought for 4, its `self_convert g 3 v 3 optional` asked and accepted.
    assert_eq!(changed(&l[15], "p1.G"), Some((json!("8"), json!("4"))));
    assert_eq!(l[16]["pending"]["prompt"], "Wisborg: pay 3g to gain 3v?", "{}", l[16]);
    assert_eq!(changed(&l[17], "p1.V"), Some((json!("0"), json!("3"))));
    // A domain someone owns is not for sale.
    assert_eq!(l[19]["fired"][0]["error"]["code"], "solver.guard_failed", "{}", l[19]);
    // `harvest.gain_per_owned_citizen_name Knight g 1`: its owner has one Knight.
    assert_eq!(changed(&l[20], "p1.G"), Some((json!("0"), json!("1"))));
    // `roll.set_one_die target=6 cost=g:2`: outside the roll phase nothing; unpaid, refused
    // whole; paid, die 1 shows 6.
    assert_eq!(l[22]["fired"][0]["error"]["code"], "solver.guard_failed", "{}", l[22]);
    assert!(
        l[22]["fired"][0]["error"]["message"].as_str().is_some_and(|m| m.contains("roll phase")),
        "{}",
        l[22]
    );
    assert_eq!(l[24]["fired"][1]["error"]["code"], "solver.out_of_bounds", "{}", l[24]);
    assert_eq!(changed(&l[26], "DIE_1"), Some((json!("0"), json!("6"))));
    // `action.end pay_to_player g 1 v 1 optional`: not at the other player's end of action; at
    // its owner's, whom to pay is asked.
    assert_eq!(fired(&l[28]), Vec::<String>::new());
    assert_eq!(l[29]["pending"]["options"], json!(["p2"]), "only the other player: {}", l[29]);
    assert_eq!(changed(&l[30], "p2.G"), Some((json!("3"), json!("4"))));
    assert_eq!(changed(&l[30], "p1.V"), Some((json!("3"), json!("4"))));
    // `take_from_player g 1 optional` (Shelley's declined this time).
    assert_eq!(changed(&l[34], "p2.G"), Some((json!("4"), json!("3"))));
    // `effect.add action.pratchettsplateau`: the owner holds the flag.
    assert_eq!(changed(&l[35], "p2.FLAG_ACTION_PRATCHETTSPLATEAU"), Some((json!("0"), json!("1"))));
    // `modify_monster_strength 3`: a monster's strength +3.
    assert_eq!(changed(&l[37], "ettercap.STRENGTH"), Some((json!("3"), json!("6"))));
    // `m 4 + concurrent_flip_one_citizen`: 4m, then each player flips a citizen of theirs.
    assert_eq!(changed(&l[38], "p1.M"), Some((json!("2"), json!("6"))));
    assert_eq!(changed(&l[39], "knight.FLIPPED"), Some((json!("0"), json!("1"))));
    assert_eq!(l[39]["pending"]["options"], json!([]), "p2 has no citizen: {}", l[39]);
    assert_eq!(l[41]["values"]["p1.OWNED_SOLDIER"], "1");
    // The translation plays the same game.
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("cards");
    let out_dir = out_dir.to_str().expect("a UTF-8 path");
    let mut t = vec!["translate", "--dialect", "effects"];
    t.extend(tables.iter().map(String::as_str));
    t.extend(["--out", out_dir]);
    let tr = sheetd(&t);
    assert!(tr.status.success(), "{}", String::from_utf8_lossy(&tr.stderr));
    assert!(sheetd(&["check", out_dir]).status.success());
    // Each string of the current grammar is shown with its unified form.
    let cards = std::fs::read_to_string(Path::new(out_dir).join("10-cards.toml")).expect("the cards");
    assert!(
        cards.contains("#   activation_effect: manipulate_resources mode=self_convert pay=g:3 gain=v:3 optional=true\n#                      unified: self_convert g 3 v 3 optional"),
        "{cards}"
    );
    let native = args(&[out_dir.to_owned()]);
    let strip = |o: &Output| String::from_utf8_lossy(&o.stdout).replace(&format!("{out_dir}/"), "");
    assert_eq!(strip(&native), strip(&out));
    // A passive with no phase that is no flag: refused at the string, by name.
    let bad = dir.path().join("domains.json");
    std::fs::write(&bad, "[{\"name\": \"X\", \"gold_cost\": 1,\n  \"passive_effect\": \"g 1\"}]")
        .expect("write");
    let check = sheetd(&["check", "--dialect", "effects", bad.to_str().expect("UTF-8")]);
    let err = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(1), "{err}");
    assert!(err.contains("effects.unsupported") && err.contains("domains.json:2:21"), "{err}");
}

/// WWRF end to end (`docs/examples/wwrf/`, `docs/examples/wwrf-game.json`): a day whose
/// votes are manipulated both ways — an absolute manipulation, a relative one after it, a
/// special one after every public one, each gone when it ends — and a night with an attack on
/// a protected player, a disguise seen by one investigation and not another, and an absent
/// hermit hit where they are; feedback in the step reports; the translation plays the same
/// game; bad element files refused at their text.
#[test]
// long: one game, step by step, then its translation and refusals.
fn the_wwrf_round_plays_as_the_guide_says() {
    let folder = repo("docs/examples/wwrf");
    let args = |ruleset: &str| -> Output {
        sheetd(&["solve", "--ruleset", ruleset, "--sheet", &repo("docs/examples/wwrf-game.json"), "--json"])
    };
    let out = args(&format!("wwrf:{folder}"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let l = json_lines(&out);
    // Day 1: the mayor's absolute 2 (and 3 private votes, kept apart).
    assert_eq!(changed(&l[0], "ann.PUBLIC_VOTES"), Some((json!("1"), json!("2"))));
    assert_eq!(changed(&l[0], "ann.PRIVATE_VOTES"), Some((json!("1"), json!("3"))));
    // The saboteur's -1 applies after it; the judge's special +1 after every public one.
    assert_eq!(l[1]["pending"]["options"].as_array().map(Vec::len), Some(9), "{}", l[1]);
    assert_eq!(changed(&l[2], "ann.PUBLIC_VOTES"), Some((json!("2"), json!("1"))));
    assert_eq!(changed(&l[4], "ann.PUBLIC_VOTES"), Some((json!("1"), json!("2"))));
    // Ann's vote counts 2, and uses the judge's manipulation up: the one beneath shows again.
    assert_eq!(changed(&l[5], "bob.VOTES"), Some((json!("0"), json!("2"))));
    assert_eq!(changed(&l[5], "ann.PUBLIC_VOTES"), Some((json!("2"), json!("1"))));
    assert!(l[5]["expired"][0]["what"].as_str().is_some_and(|w| w.contains("Judge")), "{}", l[5]);
    // The day ends: the mayor's and the saboteur's ~Phase manipulations expire.
    assert_eq!(l[7]["expired"].as_array().map(Vec::len), Some(2), "{}", l[7]);
    // Night 2: investigations' feedback (@Result): the strong disguise fools the role
    // investigation (WD, SD), not the class one.
    assert_eq!(changed(&l[13], "fay.RESULT"), Some((json!(""), json!("Citizen"))));
    assert_eq!(changed(&l[15], "fay.RESULT"), Some((json!("Citizen"), json!("Werewolf"))));
    // The night ends: the attack on eve is evaded by the doctor's defense; the hermit, absent
    // at eve's, is hit there and dies; the attacker's feedback says so.
    assert_eq!(changed(&l[18], "eve.ALIVE"), None);
    assert_eq!(changed(&l[18], "ivy.ALIVE"), Some((json!("1"), json!("0"))));
    assert_eq!(changed(&l[18], "bob.SUCCESS"), Some((json!(""), json!("Success"))));
    let rules = fired(&l[18]);
    assert!(
        rules.iter().any(|r| r == "a defense evades a hit") && rules.iter().any(|r| r == "a hit lands"),
        "{rules:?}"
    );
    assert_eq!(l[19]["values"]["LIVING"], "8", "{}", l[19]);
    // The translation plays the same game.
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("wwrf");
    let out_dir = out_dir.to_str().expect("a UTF-8 path");
    let tr = sheetd(&["translate", "--dialect", "wwrf", &folder, "--out", out_dir]);
    assert!(tr.status.success(), "{}", String::from_utf8_lossy(&tr.stderr));
    assert!(sheetd(&["check", out_dir]).status.success());
    let native = args(out_dir);
    let strip = |o: &Output| String::from_utf8_lossy(&o.stdout).replace(&format!("{out_dir}/"), "");
    assert_eq!(strip(&native), strip(&out));
    // Bad element files: each refused with its code at its line and column.
    for (text, code, at) in [
        (
            "**Seer** | Townsfolk Investigative\n__Formalized__\nAt Dawn: Untarget\n",
            "wwrf.unknown_trigger",
            "seer.md:3:1",
        ),
        (
            "**Seer** | Townsfolk Investigative\n__Formalized__\nStart Night: Untarget [Weather: Rain]\n",
            "wwrf.unknown_restriction",
            "seer.md:3:24",
        ),
        (
            "**Seer** | Townsfolk Investigative\n__Formalized__\nStart Night: Gaze @Selection\n",
            "wwrf.unknown_ability",
            "seer.md:3:14",
        ),
        (
            "**Seer** | Townsfolk Investigative\n__Formalized__\nStart Night: Untarget [Condition: (@Target exists) and ($living > 1]\n",
            "wwrf.syntax",
            "seer.md:3:56",
        ),
    ] {
        let bad = dir.path().join("seer.md");
        std::fs::write(&bad, text).expect("write");
        let check = sheetd(&["check", "--dialect", "wwrf", bad.to_str().expect("UTF-8")]);
        let err = String::from_utf8_lossy(&check.stderr);
        assert_eq!(check.status.code(), Some(1), "{err}");
        assert!(err.contains(code) && err.contains(at), "{code} at {at}: {err}");
    }
}
