#[ddx::derivatives]
fn f(x: f64) -> f64 {
    let mut s = x;
    for _ in 0..x {
        s *= x;
    }
    s
}

fn main() {}
