#[ddx::derivatives]
fn f(x: f64) -> f64 {
    x.gamma() + 1.0
}

fn main() {}
