//! "Did you mean …?": the known name nearest to a misspelled one, for hints in errors.
//!
//! Names are compared case-insensitively by Damerau–Levenshtein distance (a swap of two
//! neighbours is one edit). A candidate is suggested only when it is close for its length: at
//! most one edit for names up to four characters, two up to eight, and a third of the length
//! beyond. Ties go to the alphabetically first (lower-cased), so the hint does not depend on the
//! order the candidates come in.

/// The candidate nearest to `name`, when one is close enough (see the module docs).
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = name.to_lowercase();
    let limit = match wanted.chars().count() {
        0 => return None,
        1..=4 => 1,
        5..=8 => 2,
        n => n / 3,
    };
    let mut best: Option<(usize, String, &'a str)> = None;
    for c in candidates {
        let lower = c.to_lowercase();
        if lower == wanted {
            // The same name in another case: the best there is.
            return Some(c);
        }
        let d = strsim::damerau_levenshtein(&wanted, &lower);
        if d <= limit && best.as_ref().is_none_or(|(bd, bl, _)| (d, &lower) < (*bd, bl)) {
            best = Some((d, lower, c));
        }
    }
    best.map(|(_, _, c)| c)
}

/// `did you mean `X`?` for [`nearest`], ready to be an error's help.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    nearest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_names_are_suggested_and_far_ones_are_not() {
        let names = ["Strength", "Dexterity", "AC", "ArmorBonus", "Speed"];
        for (typo, want) in [
            ("Strenght", Some("Strength")),
            ("dexterity", Some("Dexterity")),
            ("Dextrity", Some("Dexterity")),
            ("AB", Some("AC")),
            ("ArmourBonus", Some("ArmorBonus")),
            ("Sped", Some("Speed")),
            ("Charisma", None),
            ("X", None),
            ("", None),
        ] {
            assert_eq!(nearest(typo, names), want, "{typo}");
        }
        assert_eq!(did_you_mean("Sped", names).as_deref(), Some("did you mean `Speed`?"));
    }

    #[test]
    fn the_nearest_wins_and_ties_go_to_the_alphabetically_first() {
        assert_eq!(nearest("Hand", ["Handle", "Hands"]), Some("Hands"));
        assert_eq!(nearest("Spead", ["Speed", "Spear"]), Some("Spear"));
        assert_eq!(nearest("Spead", ["Spear", "Speed"]), Some("Spear"));
    }
}
