use geom::parse::{parse_shape, total_area};
use geom::vec2::{centroid, Vec2};

#[test]
fn parse_and_measure() {
    let s = parse_shape("rect 1 1 4 5").unwrap();
    assert_eq!(s.area(), 12.0);
    assert_eq!(s.perimeter(), 14.0);
}

#[test]
fn total_area_failed_line_is_reported() {
    assert!(total_area(&["rect 0 0 1 1", "blob 2"]).is_err());
}

#[test]
fn centroid_of_triangle() {
    let c = centroid(&[Vec2::new(0.0, 0.0), Vec2::new(3.0, 0.0), Vec2::new(0.0, 3.0)]).unwrap();
    assert_eq!(c, Vec2::new(1.0, 1.0));
}

#[test]
fn polygon_from_text() {
    let s = parse_shape("poly 0 0 4 0 4 4 0 4").unwrap();
    assert_eq!(s.area(), 16.0);
}
