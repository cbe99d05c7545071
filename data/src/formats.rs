//! The data formats game data uses beyond the core's NUMBER, BOOLEAN and STRING:
//!
//! - [`OrderedPair`]: two exact numbers, written `5,5` or `2.5,2.5` (PCGen's `Face`);
//! - [`Dice`]: a dice expression, written `1d8`, `2d6+1`, `3d4-2`, `d4` (one die, as in PCGen),
//!   or a plain whole number `0`;
//! - [`Enumeration`]: one of a fixed set of keys the data declares (ALIGNMENT `LG`, HANDED
//!   `Right`), matched case-insensitively and written with the declared spelling.
//!
//! Each is a [`FormatType`] registered with the solver's rules, so values of these formats are
//! parsed once at load and compared by the formula language's `==`.

use formula::{CustomData, FormatType, canonical_decimal, parse_decimal};
use rust_decimal::Decimal;
use std::any::Any;
use std::sync::Arc;

/// The ORDEREDPAIR format: `x,y`.
#[derive(Debug)]
pub struct OrderedPair;

/// A value of [`OrderedPair`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair(pub Decimal, pub Decimal);

impl CustomData for Pair {
    fn literal(&self) -> String {
        // Put together without the formatting machinery: values are read out for every sheet.
        let (a, b) = (canonical_decimal(self.0), canonical_decimal(self.1));
        let mut s = String::with_capacity(a.len() + 1 + b.len());
        s.push_str(&a);
        s.push(',');
        s.push_str(&b);
        s
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl FormatType for OrderedPair {
    fn name(&self) -> &str {
        "ORDEREDPAIR"
    }
    fn parse_literal(&self, text: &str) -> Result<Arc<dyn CustomData>, String> {
        let (x, y) = text.split_once(',').ok_or("an ORDEREDPAIR is written `x,y`, e.g. `5,5`")?;
        let x = parse_decimal(x.trim()).map_err(|e| format!("first number: {e}"))?;
        let y = parse_decimal(y.trim()).map_err(|e| format!("second number: {e}"))?;
        Ok(Arc::new(Pair(x, y)))
    }
    fn default_value(&self) -> Arc<dyn CustomData> {
        Arc::new(Pair(Decimal::ZERO, Decimal::ZERO))
    }
    /// Equal canonical literals, compared as numbers: no text made for either.
    fn equal(&self, a: &dyn CustomData, b: &dyn CustomData) -> bool {
        match (a.as_any().downcast_ref::<Pair>(), b.as_any().downcast_ref::<Pair>()) {
            (Some(x), Some(y)) => x == y,
            _ => a.literal() == b.literal(),
        }
    }
}

/// The DICE format: `NdS`, `NdS+B`, `NdS-B` (`N` left out is one die: `d4`), or a whole number `B`.
#[derive(Debug)]
pub struct Dice;

/// A value of [`Dice`]: `count` dice of `sides` sides plus `bonus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Roll {
    pub count: u32,
    pub sides: u32,
    pub bonus: i64,
}

impl CustomData for Roll {
    fn literal(&self) -> String {
        // `2d6`, `1d8+2`, `1d4-1`, or the bonus alone; put together without the formatting
        // machinery (values are read out for every sheet).
        let mut n = itoa::Buffer::new();
        if self.count == 0 {
            return n.format(self.bonus).to_owned();
        }
        let mut s = String::with_capacity(16);
        s.push_str(n.format(self.count));
        s.push('d');
        s.push_str(n.format(self.sides));
        if self.bonus > 0 {
            s.push('+');
        }
        if self.bonus != 0 {
            s.push_str(n.format(self.bonus));
        }
        s
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn whole<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} must be a whole number, not `{text}`"));
    }
    text.parse().map_err(|_| format!("{what} `{text}` is too large"))
}

impl FormatType for Dice {
    fn name(&self) -> &str {
        "DICE"
    }
    fn parse_literal(&self, text: &str) -> Result<Arc<dyn CustomData>, String> {
        let t = text.trim();
        let Some(d) = t.find(['d', 'D']) else {
            let (neg, digits) = match t.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, t),
            };
            let b: i64 = whole(digits, "a DICE value without `d`")
                .map_err(|e| format!("{e} (write `1d8`, `2d6+1` or a whole number)"))?;
            return Ok(Arc::new(Roll { count: 0, sides: 0, bonus: if neg { -b } else { b } }));
        };
        // `d4` is one die, as in PCGen.
        let count: u32 = if d == 0 { 1 } else { whole(&t[..d], "the number of dice")? };
        let rest = &t[d + 1..];
        let (sides, bonus) = match rest.find(['+', '-']) {
            Some(i) => {
                let b: i64 = whole(&rest[i + 1..], "the bonus")?;
                (&rest[..i], if rest.as_bytes()[i] == b'-' { -b } else { b })
            }
            None => (rest, 0),
        };
        let sides: u32 = whole(sides, "the number of sides")?;
        if sides == 0 {
            return Err("a die has at least one side".to_owned());
        }
        Ok(Arc::new(Roll { count, sides, bonus }))
    }
    fn default_value(&self) -> Arc<dyn CustomData> {
        Arc::new(Roll { count: 0, sides: 0, bonus: 0 })
    }
    /// Equal canonical literals, compared field by field: no text made for either. (A roll of
    /// no dice is its bonus, whatever its sides.)
    fn equal(&self, a: &dyn CustomData, b: &dyn CustomData) -> bool {
        match (a.as_any().downcast_ref::<Roll>(), b.as_any().downcast_ref::<Roll>()) {
            (Some(x), Some(y)) => {
                x.count == y.count && x.bonus == y.bonus && (x.count == 0 || x.sides == y.sides)
            }
            _ => a.literal() == b.literal(),
        }
    }
}

/// A format whose values are keys the data declares (ALIGNMENT: `LG`, `TN`, …).
#[derive(Debug)]
pub struct Enumeration {
    name: Arc<str>,
    values: Vec<Arc<str>>,
}

/// A value of an [`Enumeration`]: the key with its declared spelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key(pub Arc<str>);

impl CustomData for Key {
    fn literal(&self) -> String {
        self.0.to_string()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Enumeration {
    /// An enumeration named `name` (upper case by convention) with `values`, in order. The first
    /// value is the default unless the ruleset sets one.
    pub fn new(name: &str, values: Vec<Arc<str>>) -> Enumeration {
        Enumeration { name: Arc::from(name), values }
    }

    /// The declared values.
    pub fn values(&self) -> &[Arc<str>] {
        &self.values
    }
}

impl FormatType for Enumeration {
    fn name(&self) -> &str {
        &self.name
    }
    fn parse_literal(&self, text: &str) -> Result<Arc<dyn CustomData>, String> {
        let t = text.trim();
        match self.values.iter().find(|v| v.eq_ignore_ascii_case(t)) {
            Some(v) => Ok(Arc::new(Key(v.clone()))),
            None => {
                let shown: Vec<&str> = self.values.iter().take(12).map(|v| &**v).collect();
                let more = if self.values.len() > 12 { ", …" } else { "" };
                Err(format!("`{t}` is not one of {} ({}{more})", self.name, shown.join(", ")))
            }
        }
    }
    fn default_value(&self) -> Arc<dyn CustomData> {
        Arc::new(Key(self.values.first().cloned().unwrap_or_else(|| Arc::from(""))))
    }
    /// The same key: no text made for either.
    fn equal(&self, a: &dyn CustomData, b: &dyn CustomData) -> bool {
        match (a.as_any().downcast_ref::<Key>(), b.as_any().downcast_ref::<Key>()) {
            (Some(x), Some(y)) => x.0 == y.0,
            _ => a.literal() == b.literal(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(t: &dyn FormatType, s: &str) -> Result<String, String> {
        t.parse_literal(s).map(|d| d.literal())
    }

    #[test]
    fn ordered_pairs() {
        assert_eq!(lit(&OrderedPair, "5,5").unwrap(), "5,5");
        assert_eq!(lit(&OrderedPair, " 2.50, 2.5 ").unwrap(), "2.5,2.5");
        assert_eq!(lit(&OrderedPair, "-1,0.5").unwrap(), "-1,0.5");
        assert!(lit(&OrderedPair, "5").unwrap_err().contains("written `x,y`"));
        assert!(lit(&OrderedPair, "5,x").unwrap_err().contains("second number"));
    }

    #[test]
    fn dice() {
        for (text, canon) in [
            ("1d8", "1d8"),
            ("2d6+1", "2d6+1"),
            ("3D4-2", "3d4-2"),
            ("0", "0"),
            ("-3", "-3"),
            ("2d6+0", "2d6"),
            ("d4", "1d4"),
            ("D6+1", "1d6+1"),
        ] {
            assert_eq!(lit(&Dice, text).unwrap(), canon, "{text}");
        }
        for bad in ["d", "-d4", "1d", "1d0", "1dx", "1d8+", "abc", "1.5d6", "99999999999d6"] {
            assert!(lit(&Dice, bad).is_err(), "{bad}");
        }
    }

    /// Each format's equality is its values' canonical literals' (the default), without
    /// making them: every pair of a format's sample values compares as their literals do.
    #[test]
    fn equality_is_equal_literals() {
        let e = Enumeration::new("HANDED", vec![Arc::from("Right"), Arc::from("Left")]);
        let samples: [(&dyn FormatType, &[&str]); 3] = [
            (&OrderedPair, &["5,5", "5.0,5", "5,5.00", "5,6", "6,5", "-0,0", "0,0", "2.5,2.50"]),
            (&Dice, &["1d8", "d8", "1d8+0", "1d8+1", "2d8", "1d6", "3", "0d9+3", "-3", "0"]),
            (&e, &["Right", "right", "Left", "LEFT"]),
        ];
        for (format, texts) in samples {
            let values: Vec<_> = texts.iter().map(|t| format.parse_literal(t).expect(t)).collect();
            for (a, ta) in values.iter().zip(texts) {
                for (b, tb) in values.iter().zip(texts) {
                    assert_eq!(format.equal(&**a, &**b), a.literal() == b.literal(), "{ta} == {tb}");
                }
            }
        }
        // A roll of no dice is its bonus, whatever sides it was given.
        let (x, y) = (Roll { count: 0, sides: 4, bonus: 2 }, Roll { count: 0, sides: 0, bonus: 2 });
        assert!(Dice.equal(&x, &y));
        assert_eq!(x.literal(), y.literal());
    }

    #[test]
    fn enumerations() {
        let e = Enumeration::new("HANDED", vec![Arc::from("Right"), Arc::from("Left")]);
        assert_eq!(lit(&e, "left").unwrap(), "Left");
        assert_eq!(e.default_value().literal(), "Right");
        assert!(lit(&e, "Up").unwrap_err().contains("`Up` is not one of HANDED (Right, Left)"));
    }
}
