//! Exact, checked arithmetic on [`Decimal`].
//!
//! Every operation returns a [`MathError`] instead of overflowing, dividing by zero or producing a
//! non-real value; the evaluator turns it into an error pointing at the operator. `^` is exact for
//! integer exponents (square-and-multiply on decimals); a fractional exponent is the one place the
//! language computes in binary floating point, as PCGen does, with the result checked to be finite.

use rust_decimal::Decimal;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};

/// Why an operation has no exact decimal result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathError {
    /// Division or remainder by zero, or zero to a negative power.
    DivisionByZero,
    /// The result is outside the decimal range (about ±7.9e28).
    Overflow,
    /// The result is not a real number (a negative base with a fractional exponent).
    Domain,
}

type R = Result<Decimal, MathError>;

/// A decimal as `i64` when it is a whole number written without a fraction (scale 0) whose
/// magnitude fits in 63 bits — the common case in game data. Reads the raw parts (a 16-byte
/// copy) instead of building an `i128` mantissa.
#[inline(always)]
pub(crate) fn small(d: Decimal) -> Option<i64> {
    let raw = d.serialize();
    let flags = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
    let lo = u32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]);
    let mid = u32::from_le_bytes([raw[8], raw[9], raw[10], raw[11]]);
    let hi = u32::from_le_bytes([raw[12], raw[13], raw[14], raw[15]]);
    // Scale is bits 16..24 of the flags; a magnitude below 2^63 has hi == 0 and mid's top bit 0.
    if flags & 0x00FF_0000 != 0 || hi != 0 || mid & 0x8000_0000 != 0 {
        return None;
    }
    let magnitude = ((mid as i64) << 32) | lo as i64;
    Some(if flags & 0x8000_0000 != 0 { -magnitude } else { magnitude })
}

/// The decimal with integer value `x` and scale 0.
#[inline(always)]
pub(crate) fn from_small(x: i64) -> Decimal {
    let m = x.unsigned_abs();
    Decimal::from_parts(m as u32, (m >> 32) as u32, 0, x < 0, 0)
}

/// Both operands as `i64` (see [`small`]). Integer arithmetic on them is exact and much faster
/// than the general decimal path; any overflow falls back to that path, which has the wider
/// range.
#[inline(always)]
fn small_pair(a: Decimal, b: Decimal) -> Option<(i64, i64)> {
    Some((small(a)?, small(b)?))
}

#[inline]
pub fn add(a: Decimal, b: Decimal) -> R {
    if let Some(r) = small_pair(a, b).and_then(|(x, y)| x.checked_add(y)) {
        return Ok(from_small(r));
    }
    a.checked_add(b).ok_or(MathError::Overflow)
}

#[inline]
pub fn sub(a: Decimal, b: Decimal) -> R {
    if let Some(r) = small_pair(a, b).and_then(|(x, y)| x.checked_sub(y)) {
        return Ok(from_small(r));
    }
    a.checked_sub(b).ok_or(MathError::Overflow)
}

#[inline]
pub fn mul(a: Decimal, b: Decimal) -> R {
    if let Some(r) = small_pair(a, b).and_then(|(x, y)| x.checked_mul(y)) {
        return Ok(from_small(r));
    }
    a.checked_mul(b).ok_or(MathError::Overflow)
}

/// `a / b`, rounded to 28 significant digits when not exact (1/3 = 0.3333…, 28 digits).
#[inline]
pub fn div(a: Decimal, b: Decimal) -> R {
    if b.is_zero() {
        return Err(MathError::DivisionByZero);
    }
    if let Some(q) = small_pair(a, b).and_then(|(x, y)| int_div_exact(x, y)) {
        return Ok(from_small(q));
    }
    a.checked_div(b).ok_or(MathError::Overflow)
}

/// `x / y` when the quotient is a whole number that fits, else `None` (7/2, division by zero,
/// `i64::MIN / -1`). One hardware division: the quotient is exact when it multiplies back.
#[inline(always)]
pub(crate) fn int_div_exact(x: i64, y: i64) -> Option<i64> {
    x.checked_div(y).filter(|q| q.wrapping_mul(y) == x)
}

/// `floor(x / y)` on whole numbers, `None` on division by zero or overflow.
#[inline(always)]
pub(crate) fn int_div_floor(x: i64, y: i64) -> Option<i64> {
    let q = x.checked_div(y)?;
    // `checked_div` succeeded, so `x % y` cannot overflow. `q` is truncated toward zero; a
    // nonzero remainder (the sign of `x`) of another sign than `y` means the true quotient is
    // negative, below `q`.
    let r = x.wrapping_rem(y);
    if r != 0 && ((r < 0) != (y < 0)) { q.checked_sub(1) } else { Some(q) }
}

/// `ceil(x / y)` on whole numbers, `None` on division by zero or overflow.
#[inline(always)]
pub(crate) fn int_div_ceil(x: i64, y: i64) -> Option<i64> {
    let q = x.checked_div(y)?;
    // As in `int_div_floor`: a remainder of the divisor's sign means a positive quotient above `q`.
    let r = x.wrapping_rem(y);
    if r != 0 && ((r < 0) == (y < 0)) { q.checked_add(1) } else { Some(q) }
}

/// Remainder with the sign of the dividend: -7 % 3 = -1, 2 % -3 = 2.
#[inline(never)]
pub fn rem(a: Decimal, b: Decimal) -> R {
    if b.is_zero() {
        return Err(MathError::DivisionByZero);
    }
    if let Some(r) = small_pair(a, b).and_then(|(x, y)| x.checked_rem(y)) {
        return Ok(from_small(r));
    }
    a.checked_rem(b).ok_or(MathError::Overflow)
}

/// An exact number with a fast path: a whole number of scale 0 that fits in `i64` is kept as
/// `Int`, so chains of integer operations (the common case in game data) run on machine
/// integers; anything else is a [`Decimal`]. `Int(x)` means exactly the decimal `x` (scale 0),
/// and every operation gives the same value as the [`Decimal`] functions of this module: an
/// integer operation that overflows or is not exact (7/2) falls back to them.
#[derive(Clone, Copy, Debug)]
pub enum Num {
    Int(i64),
    Dec(Decimal),
}

impl Num {
    /// `d` as an `Int` when it is a small whole number of scale 0, else as a `Dec`.
    #[inline(always)]
    pub fn from_decimal(d: Decimal) -> Num {
        match small(d) {
            Some(i) => Num::Int(i),
            None => Num::Dec(d),
        }
    }

    /// The number as a decimal.
    #[inline(always)]
    pub fn to_decimal(self) -> Decimal {
        match self {
            Num::Int(i) => from_small(i),
            Num::Dec(d) => d,
        }
    }

    /// `self < other`.
    #[inline(always)]
    pub fn less(self, other: Num) -> bool {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a < b,
            (a, b) => a.to_decimal() < b.to_decimal(),
        }
    }

    /// The greater of the two (`self` when equal).
    #[inline(always)]
    pub fn max(self, other: Num) -> Num {
        if self.less(other) { other } else { self }
    }

    /// The lesser of the two (`self` when equal).
    #[inline(always)]
    pub fn min(self, other: Num) -> Num {
        if other.less(self) { other } else { self }
    }

    /// Checked `self + other`.
    #[inline(always)]
    pub fn checked_add(self, other: Num) -> Result<Num, MathError> {
        if let (Num::Int(x), Num::Int(y)) = (self, other)
            && let Some(r) = x.checked_add(y)
        {
            return Ok(Num::Int(r));
        }
        add(self.to_decimal(), other.to_decimal()).map(Num::from_decimal)
    }

    /// Checked `self × other`.
    #[inline(always)]
    pub fn checked_mul(self, other: Num) -> Result<Num, MathError> {
        if let (Num::Int(x), Num::Int(y)) = (self, other)
            && let Some(r) = x.checked_mul(y)
        {
            return Ok(Num::Int(r));
        }
        mul(self.to_decimal(), other.to_decimal()).map(Num::from_decimal)
    }

    /// Checked `self / other` (see [`div`]).
    #[inline(always)]
    pub fn checked_div(self, other: Num) -> Result<Num, MathError> {
        if let (Num::Int(x), Num::Int(y)) = (self, other)
            && let Some(q) = int_div_exact(x, y)
        {
            return Ok(Num::Int(q));
        }
        div(self.to_decimal(), other.to_decimal()).map(Num::from_decimal)
    }
}

impl PartialEq for Num {
    /// Numeric equality: `Int(3)` equals `Dec(3.0)`.
    fn eq(&self, other: &Num) -> bool {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a == b,
            (a, b) => a.to_decimal() == b.to_decimal(),
        }
    }
}

/// Rounds half up toward +infinity: round(2.5) = 3, round(-2.5) = -2, round(-5.5) = -5.
pub fn round(a: Decimal) -> R {
    Ok(add(a, Decimal::new(5, 1))?.floor())
}

/// `base ^ exponent`. Kept out of line: it is rare, and inlining it would bloat the hot
/// arithmetic path.
#[inline(never)]
pub fn pow(base: Decimal, exponent: Decimal) -> R {
    if exponent.fract().is_zero() {
        return pow_integer(base, exponent);
    }
    if base.is_sign_negative() && !base.is_zero() {
        return Err(MathError::Domain);
    }
    if base.is_zero() {
        return if exponent.is_sign_positive() { Ok(Decimal::ZERO) } else { Err(MathError::DivisionByZero) };
    }
    let (b, e) = (base.to_f64().ok_or(MathError::Overflow)?, exponent.to_f64().ok_or(MathError::Overflow)?);
    let r = b.powf(e);
    if !r.is_finite() {
        return Err(MathError::Overflow);
    }
    // Keep the float's 15 significant digits that are meaningful; the rest is binary noise.
    let d = Decimal::from_f64(r).ok_or(MathError::Overflow)?;
    Ok(round_significant(d, 15))
}

fn round_significant(d: Decimal, digits: u32) -> Decimal {
    if d.is_zero() {
        return d;
    }
    let magnitude = d.abs().to_f64().map_or(0.0, |f| f.log10().floor()) as i64;
    let dp = (digits as i64 - 1 - magnitude).clamp(0, 28) as u32;
    d.round_dp(dp).normalize()
}

fn pow_integer(base: Decimal, exponent: Decimal) -> R {
    let negative = exponent.is_sign_negative();
    let Some(mut n) = exponent.abs().to_u64() else {
        // |exponent| beyond u64: only trivial bases have a representable result.
        return trivial_power(base, exponent).ok_or(if base.is_zero() && negative {
            MathError::DivisionByZero
        } else {
            MathError::Overflow
        });
    };
    if negative && base.is_zero() {
        return Err(MathError::DivisionByZero);
    }
    let mut result = Decimal::ONE;
    let mut square = base;
    while n > 0 {
        if n & 1 == 1 {
            result = mul(result, square)?;
        }
        n >>= 1;
        if n > 0 {
            square = mul(square, square)?;
        }
    }
    if negative { div(Decimal::ONE, result) } else { Ok(result) }
}

fn trivial_power(base: Decimal, exponent: Decimal) -> Option<Decimal> {
    if base == Decimal::ONE {
        Some(Decimal::ONE)
    } else if base.is_zero() && exponent.is_sign_positive() {
        Some(Decimal::ZERO)
    } else if base == Decimal::NEGATIVE_ONE {
        let even = (exponent / Decimal::TWO).fract().is_zero();
        Some(if even { Decimal::ONE } else { Decimal::NEGATIVE_ONE })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn exact_operations() {
        assert_eq!(add(d("0.1"), d("0.2")), Ok(d("0.3")));
        assert_eq!(div(d("5"), d("2")), Ok(d("2.5")));
        assert_eq!(div(d("1"), d("3")).unwrap().to_string(), "0.3333333333333333333333333333");
        assert_eq!(rem(d("-7"), d("3")), Ok(d("-1")));
        assert_eq!(rem(d("2"), d("-3")), Ok(d("2")));
        assert_eq!(rem(d("3.1"), d("2")), Ok(d("1.1")));
        assert_eq!(div(d("1"), d("0")), Err(MathError::DivisionByZero));
        assert_eq!(rem(d("1"), d("0")), Err(MathError::DivisionByZero));
        assert_eq!(mul(Decimal::MAX, d("2")), Err(MathError::Overflow));
        assert_eq!(add(Decimal::MAX, d("1")), Err(MathError::Overflow));
        assert_eq!(sub(Decimal::MIN, d("1")), Err(MathError::Overflow));
        // Past i64 the integer fast path hands over to the general decimal path.
        assert_eq!(add(d("9223372036854775807"), d("1")), Ok(d("9223372036854775808")));
        assert_eq!(mul(d("9223372036854775807"), d("2")), Ok(d("18446744073709551614")));
        assert_eq!(sub(d("-9223372036854775808"), d("1")), Ok(d("-9223372036854775809")));
        assert_eq!(div(d("-9223372036854775808"), d("-1")), Ok(d("9223372036854775808")));
        assert_eq!(rem(d("-9223372036854775808"), d("-1")), Ok(d("0")));
        assert_eq!(div(d("7"), d("2")), Ok(d("3.5")));
        assert_eq!(div(d("-8"), d("2")), Ok(d("-4")));
        // Negative zero does not leak out of the fast path.
        assert_eq!(mul(d("-3"), d("0")).unwrap().to_string(), "0");
    }

    #[test]
    fn rounding_half_up() {
        for (x, r) in [("2.5", "3"), ("-2.5", "-2"), ("-5.5", "-5"), ("6.5", "7"), ("5.3", "5"), ("-2", "-2")]
        {
            assert_eq!(round(d(x)), Ok(d(r)), "round({x})");
        }
        assert_eq!(round(Decimal::MAX), Err(MathError::Overflow));
    }

    #[test]
    fn powers() {
        assert_eq!(pow(d("3"), d("5")), Ok(d("243")));
        assert_eq!(pow(d("2.1"), d("3")), Ok(d("9.261")));
        assert_eq!(pow(d("1.3"), d("0")), Ok(d("1")));
        assert_eq!(pow(d("2"), d("-2")), Ok(d("0.25")));
        assert_eq!(pow(d("0"), d("-1")), Err(MathError::DivisionByZero));
        assert_eq!(pow(d("2"), d("1000")), Err(MathError::Overflow));
        assert_eq!(pow(d("1"), d("100000000000000000000")), Ok(d("1")));
        assert_eq!(pow(d("-1"), d("100000000000000000001")), Ok(d("-1")));
        assert_eq!(pow(d("-2"), d("0.5")), Err(MathError::Domain));
        assert_eq!(pow(d("0"), d("0.5")), Ok(d("0")));
        let sqrt2 = pow(d("2"), d("0.5")).unwrap();
        assert!((sqrt2 - d("1.41421356237310")).abs() < d("1e-14"), "{sqrt2}");
        let x = pow(d("2"), d("3.2")).unwrap();
        let expected = d("9.18958683997628");
        assert!(((x - expected) / expected).abs() < d("1e-12"), "{x}");
    }
}
