//! The rules of the values a document holds: those of JSON text read by
//! [`super::parse_json`] (nesting up to `max_depth`, integers of at most
//! [`super::MAX_INT_DIGITS`] digits, finite doubles), for a builder of document values
//! walked from a foreign value: the binding's `PyBuilder` (a `StateDocument`'s values,
//! from Python objects or from patches read as JSON text) applies them as it builds.

use super::{invalid, too_deep, PatchError, MAX_INT_DIGITS};

/// A container opened at nesting `depth` (0: the value itself is one).
pub fn container_rule(depth: usize, max_depth: usize) -> Result<(), PatchError> {
    if depth >= max_depth { Err(too_deep(max_depth)) } else { Ok(()) }
}

/// An integer given as exact decimal text: at most [`MAX_INT_DIGITS`] digits.
pub fn int_rule(decimal: &str) -> Result<(), PatchError> {
    let digits = decimal.strip_prefix('-').unwrap_or(decimal);
    if digits.len() <= MAX_INT_DIGITS {
        Ok(())
    } else {
        Err(invalid(format!("integer is too large (limit {MAX_INT_DIGITS} digits)")))
    }
}

/// Any other number: a finite double.
pub fn float_rule(v: f64) -> Result<(), PatchError> {
    if v.is_finite() { Ok(()) } else { Err(invalid(format!("{v} is not a JSON number"))) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parse_json;

    /// The rules agree with what JSON text accepts.
    #[test]
    fn rules_of_json_text() {
        let nest = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        assert!(parse_json(nest(3).as_bytes(), 3, 0).is_ok());
        assert!(container_rule(2, 3).is_ok());
        assert!(parse_json(nest(4).as_bytes(), 3, 0).is_err());
        assert!(container_rule(3, 3).unwrap_err().reason.contains("deeper than 3"));
        let max = "9".repeat(MAX_INT_DIGITS);
        assert!(parse_json(max.as_bytes(), 512, 0).is_ok() && int_rule(&max).is_ok());
        assert!(int_rule(&format!("-{max}")).is_ok());
        let over = "9".repeat(MAX_INT_DIGITS + 1);
        assert!(parse_json(over.as_bytes(), 512, 0).is_err());
        assert!(int_rule(&over).unwrap_err().reason.contains("too large"));
        assert!(float_rule(1.5e300).is_ok());
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(float_rule(bad).unwrap_err().reason.contains("not a JSON number"));
        }
    }
}
