#[ddx::derivatives]
fn f(x: f64, n: f32) -> f64 {
    x * n
}

fn main() {}
