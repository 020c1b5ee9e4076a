use crate::vec2::Vec2;

#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Circle { center: Vec2, radius: f64 },
    Rect { min: Vec2, max: Vec2 },
    Polygon(Vec<Vec2>),
}

impl Shape {
    pub fn area(&self) -> f64 {
        match self {
            Shape::Circle { radius, .. } => std::f64::consts::PI * radius * radius,
            Shape::Rect { min, max } => (max.x - min.x) * (max.y - min.y),
            Shape::Polygon(points) => polygon_area(points),
        }
    }

    pub fn perimeter(&self) -> f64 {
        match self {
            Shape::Circle { radius, .. } => 2.0 * std::f64::consts::PI * radius,
            Shape::Rect { min, max } => 2.0 * ((max.x - min.x) + (max.y - min.y)),
            Shape::Polygon(points) => {
                let n = points.len();
                (0..n).map(|i| (points[(i + 1) % n] - points[i]).length()).sum()
            }
        }
    }
}

pub fn polygon_area(points: &[Vec2]) -> f64 {
    let n = points.len();
    let twice: f64 = (0..n).map(|i| points[i].cross(points[(i + 1) % n])).sum();
    twice.abs() / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn circle_area() {
        let c = Shape::Circle { center: Vec2::new(0.0, 0.0), radius: 2.0 };
        assert!(close(c.area(), 4.0 * std::f64::consts::PI));
    }
    #[test]
    fn circle_perimeter() {
        let c = Shape::Circle { center: Vec2::new(0.0, 0.0), radius: 1.0 };
        assert!(close(c.perimeter(), 2.0 * std::f64::consts::PI));
    }
    #[test]
    fn rect_area() {
        let r = Shape::Rect { min: Vec2::new(0.0, 0.0), max: Vec2::new(3.0, 2.0) };
        assert_eq!(r.area(), 6.0);
    }
    #[test]
    fn rect_perimeter() {
        let r = Shape::Rect { min: Vec2::new(0.0, 0.0), max: Vec2::new(3.0, 2.0) };
        assert_eq!(r.perimeter(), 10.0);
    }
    #[test]
    fn triangle_area() {
        let t = Shape::Polygon(vec![Vec2::new(0.0, 0.0), Vec2::new(4.0, 0.0), Vec2::new(0.0, 3.0)]);
        assert_eq!(t.area(), 6.0);
    }
    #[test]
    fn triangle_perimeter() {
        let t = Shape::Polygon(vec![Vec2::new(0.0, 0.0), Vec2::new(4.0, 0.0), Vec2::new(0.0, 3.0)]);
        assert_eq!(t.perimeter(), 12.0);
    }
    #[test]
    fn clockwise_polygon_area() {
        let t = Shape::Polygon(vec![Vec2::new(0.0, 0.0), Vec2::new(0.0, 3.0), Vec2::new(4.0, 0.0)]);
        assert_eq!(t.area(), 6.0);
    }
}
