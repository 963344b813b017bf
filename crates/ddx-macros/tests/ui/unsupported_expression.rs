#[ddx::derivatives]
fn f(x: f64, y: f64) -> f64 {
    let k = match 1 {
        _ => 2.0,
    };
    x * y + k
}

fn main() {}
