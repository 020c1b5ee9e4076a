use crate::shapes::Shape;
use crate::vec2::Vec2;
use std::fmt;

#[derive(Debug, PartialEq)]
pub enum ParseError {
    Empty,
    UnknownKind(String),
    BadNumber(String),
    WrongArity { kind: String, expected: usize, got: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => write!(f, "empty input"),
            ParseError::UnknownKind(k) => write!(f, "unknown shape {k:?}"),
            ParseError::BadNumber(n) => write!(f, "bad number {n:?}"),
            ParseError::WrongArity { kind, expected, got } => write!(f, "{kind} takes {expected} numbers, got {got}"),
        }
    }
}

fn numbers(words: &[&str]) -> Result<Vec<f64>, ParseError> {
    words.iter().map(|w| w.parse::<f64>().map_err(|_| ParseError::BadNumber(w.to_string()))).collect()
}

fn arity(kind: &str, nums: &[f64], expected: usize) -> Result<(), ParseError> {
    if nums.len() != expected {
        return Err(ParseError::WrongArity { kind: kind.to_string(), expected, got: nums.len() });
    }
    Ok(())
}

pub fn parse_shape(text: &str) -> Result<Shape, ParseError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let (kind, rest) = words.split_first().ok_or(ParseError::Empty)?;
    let nums = numbers(rest)?;
    match *kind {
        "circle" => {
            arity(kind, &nums, 3)?;
            Ok(Shape::Circle { center: Vec2::new(nums[0], nums[1]), radius: nums[2] })
        }
        "rect" => {
            arity(kind, &nums, 4)?;
            Ok(Shape::Rect { min: Vec2::new(nums[0], nums[1]), max: Vec2::new(nums[2], nums[3]) })
        }
        "poly" => {
            if nums.len() % 2 != 0 || nums.len() < 6 {
                return Err(ParseError::WrongArity { kind: kind.to_string(), expected: 6, got: nums.len() });
            }
            Ok(Shape::Polygon(nums.chunks(2).map(|c| Vec2::new(c[0], c[1])).collect()))
        }
        other => Err(ParseError::UnknownKind(other.to_string())),
    }
}

pub fn total_area(lines: &[&str]) -> Result<f64, ParseError> {
    let mut total = 0.0;
    for line in lines {
        total += parse_shape(line)?.area();
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_circle() {
        assert_eq!(
            parse_shape("circle 0 0 1").unwrap(),
            Shape::Circle { center: Vec2::new(0.0, 0.0), radius: 1.0 }
        );
    }
    #[test]
    fn parse_rect() {
        assert!(matches!(parse_shape("rect 0 0 2 2"), Ok(Shape::Rect { .. })));
    }
    #[test]
    fn parse_poly() {
        assert!(matches!(parse_shape("poly 0 0 1 0 0 1"), Ok(Shape::Polygon(_))));
    }
    #[test]
    fn parse_error_empty() {
        assert_eq!(parse_shape("  "), Err(ParseError::Empty));
    }
    #[test]
    fn parse_error_unknown_kind() {
        assert_eq!(parse_shape("hexagon 1"), Err(ParseError::UnknownKind("hexagon".into())));
    }
    #[test]
    fn parse_error_bad_number() {
        assert_eq!(parse_shape("circle 0 x 1"), Err(ParseError::BadNumber("x".into())));
    }
    #[test]
    fn parse_error_arity() {
        assert!(matches!(parse_shape("circle 0 0"), Err(ParseError::WrongArity { .. })));
    }
    #[test]
    fn error_display() {
        assert_eq!(ParseError::UnknownKind("x".into()).to_string(), "unknown shape \"x\"");
    }
    #[test]
    fn total_area_of_lines() {
        assert_eq!(total_area(&["rect 0 0 2 3", "rect 0 0 1 1"]).unwrap(), 7.0);
    }
}
