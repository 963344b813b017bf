#[ddx::derivatives]
fn f(x: f64) -> [f64; 2] {
    [x, x]
}

fn main() {}
