pub mod bbox;
pub mod parse;
pub mod shapes;
pub mod vec2;
