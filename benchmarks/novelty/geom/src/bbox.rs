use crate::vec2::Vec2;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BBox {
    pub min: Vec2,
    pub max: Vec2,
}

impl BBox {
    pub fn of(points: &[Vec2]) -> Option<BBox> {
        let first = *points.first()?;
        let mut b = BBox { min: first, max: first };
        for p in &points[1..] {
            b.min = Vec2::new(b.min.x.min(p.x), b.min.y.min(p.y));
            b.max = Vec2::new(b.max.x.max(p.x), b.max.y.max(p.y));
        }
        Some(b)
    }
    pub fn width(&self) -> f64 {
        self.max.x - self.min.x
    }
    pub fn height(&self) -> f64 {
        self.max.y - self.min.y
    }
    pub fn contains(&self, p: Vec2) -> bool {
        p.x >= self.min.x && p.x <= self.max.x && p.y >= self.min.y && p.y <= self.max.y
    }
    pub fn union(&self, o: &BBox) -> BBox {
        BBox {
            min: Vec2::new(self.min.x.min(o.min.x), self.min.y.min(o.min.y)),
            max: Vec2::new(self.max.x.max(o.max.x), self.max.y.max(o.max.y)),
        }
    }
    pub fn intersects(&self, o: &BBox) -> bool {
        self.min.x <= o.max.x && o.min.x <= self.max.x && self.min.y <= o.max.y && o.min.y <= self.max.y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(x: f64, y: f64, s: f64) -> BBox {
        BBox { min: Vec2::new(x, y), max: Vec2::new(x + s, y + s) }
    }

    #[test]
    fn of_points() {
        let b = BBox::of(&[Vec2::new(1.0, 5.0), Vec2::new(-2.0, 3.0), Vec2::new(4.0, -1.0)]).unwrap();
        assert_eq!(b, BBox { min: Vec2::new(-2.0, -1.0), max: Vec2::new(4.0, 5.0) });
    }
    #[test]
    fn of_nothing() {
        assert_eq!(BBox::of(&[]), None);
    }
    #[test]
    fn size() {
        assert_eq!((square(0.0, 0.0, 2.0).width(), square(0.0, 0.0, 2.0).height()), (2.0, 2.0));
    }
    #[test]
    fn contains_inside_and_edge() {
        let b = square(0.0, 0.0, 1.0);
        assert!(b.contains(Vec2::new(0.5, 0.5)) && b.contains(Vec2::new(1.0, 0.0)));
    }
    #[test]
    fn contains_outside() {
        assert!(!square(0.0, 0.0, 1.0).contains(Vec2::new(1.5, 0.5)));
    }
    #[test]
    fn union_of_two() {
        let u = square(0.0, 0.0, 1.0).union(&square(2.0, 2.0, 1.0));
        assert_eq!(u, BBox { min: Vec2::new(0.0, 0.0), max: Vec2::new(3.0, 3.0) });
    }
    #[test]
    fn intersects_overlap() {
        assert!(square(0.0, 0.0, 2.0).intersects(&square(1.0, 1.0, 2.0)));
    }
    #[test]
    fn intersects_apart() {
        assert!(!square(0.0, 0.0, 1.0).intersects(&square(3.0, 3.0, 1.0)));
    }
}
