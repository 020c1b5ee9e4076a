use std::ops::{Add, Mul, Sub};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vec2 {
    pub x: f64,
    pub y: f64,
}

impl Vec2 {
    pub fn new(x: f64, y: f64) -> Self {
        Vec2 { x, y }
    }
    pub fn dot(self, other: Vec2) -> f64 {
        self.x * other.x + self.y * other.y
    }
    pub fn cross(self, other: Vec2) -> f64 {
        self.x * other.y - self.y * other.x
    }
    pub fn length(self) -> f64 {
        self.dot(self).sqrt()
    }
}

impl Add for Vec2 {
    type Output = Vec2;
    fn add(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x + o.x, self.y + o.y)
    }
}

impl Sub for Vec2 {
    type Output = Vec2;
    fn sub(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x - o.x, self.y - o.y)
    }
}

impl Mul<f64> for Vec2 {
    type Output = Vec2;
    fn mul(self, k: f64) -> Vec2 {
        Vec2::new(self.x * k, self.y * k)
    }
}

pub fn centroid(points: &[Vec2]) -> Option<Vec2> {
    if points.is_empty() {
        return None;
    }
    let sum = points.iter().fold(Vec2::new(0.0, 0.0), |a, &p| a + p);
    Some(sum * (1.0 / points.len() as f64))
}

pub fn names(points: Vec<Vec2>) -> Vec<String> {
    let labels: Vec<String> = points.iter().map(|p| format!("({}, {})", p.x, p.y)).collect();
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add() {
        assert_eq!(Vec2::new(1.0, 2.0) + Vec2::new(3.0, 4.0), Vec2::new(4.0, 6.0));
    }
    #[test]
    fn sub() {
        assert_eq!(Vec2::new(1.0, 2.0) - Vec2::new(3.0, 4.0), Vec2::new(-2.0, -2.0));
    }
    #[test]
    fn dot() {
        assert_eq!(Vec2::new(1.0, 2.0).dot(Vec2::new(3.0, 4.0)), 11.0);
    }
    #[test]
    fn cross() {
        assert_eq!(Vec2::new(1.0, 0.0).cross(Vec2::new(0.0, 1.0)), 1.0);
    }
    #[test]
    fn length() {
        assert_eq!(Vec2::new(3.0, 4.0).length(), 5.0);
    }
    #[test]
    fn centroid_of_square() {
        let pts = [Vec2::new(0.0, 0.0), Vec2::new(2.0, 0.0), Vec2::new(2.0, 2.0), Vec2::new(0.0, 2.0)];
        assert_eq!(centroid(&pts), Some(Vec2::new(1.0, 1.0)));
    }
    #[test]
    fn centroid_error_on_empty() {
        assert_eq!(centroid(&[]), None);
    }
    #[test]
    fn names_of_points() {
        assert_eq!(names(vec![Vec2::new(1.0, 2.0)]), vec!["(1, 2)".to_string()]);
    }
}
