//! Instruction counts of calls through a user function of two arguments against one of
//! three, for `valgrind --tool=callgrind` (BENCHMARKS.md, "User functions of k
//! arguments"): what reading a call's arguments through a pack chain (issue 17) costs
//! beside the `call(tag, a, b)` node of one or two.
//!
//! `user_call_cost ARITY BACKEND LANE [calls]`
//!
//! - `ARITY`: `2` — `f(x, y) = x·y` over the symbols `(x, y, z)` (`z` added outside the
//!   call, so both models have three symbols); `3` — `f(x, y, z) = x·y + z`, the same value.
//! - `BACKEND`: `interp` or `jit` (`Backend::Compile`, the lane's kernel waited for first).
//! - `LANE`: `value` (`evaluate`) or `gradient`.
//!
//! Only the loop is counted: it is the function `measured`, so
//!
//! ```sh
//! CARGO_INCREMENTAL=0 cargo build --release -p ddx-models --example user_call_cost
//! valgrind --tool=callgrind --toggle-collect='*measured*' --callgrind-out-file=/dev/null \
//!     $CARGO_TARGET_DIR/release/examples/user_call_cost 3 interp value 10000
//! ```

use ddx::{rt, Backend, Equation, LaneKind, Options, UserFunction};
use std::hint::black_box;

/// What callgrind counts (`--toggle-collect='*measured*'`).
#[inline(never)]
fn measured(eq: &Equation, gradient: bool, calls: usize) -> f64 {
    let mut sum = 0.0;
    for k in 0..calls {
        let x = [0.5 + (k % 7) as f64, 1.25, -0.75];
        sum += if gradient {
            eq.gradient(black_box(x)).expect("answers")[2]
        } else {
            eq.evaluate(black_box(x)).expect("answers")
        };
    }
    sum
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "user_call_cost ARITY(2|3) BACKEND(interp|jit) LANE(value|gradient) [calls]";
    let (arity, backend, lane) = match args.get(1..4) {
        Some([a, b, l]) => (a.as_str(), b.as_str(), l.as_str()),
        _ => panic!("{usage}"),
    };
    let calls: usize = args.get(4).map_or(10_000, |c| c.parse().expect("a count"));
    let eq = match arity {
        "2" => {
            let f = UserFunction::new(
                "mul2",
                2,
                |x| x[0] * x[1],
                |x, g| g.copy_from_slice(&[x[1], x[0]]),
            )
            .expect("registers");
            rt::equation(|| {
                let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
                f.call(&[x, y]) + z
            })
        }
        "3" => {
            let f = UserFunction::new(
                "muladd3",
                3,
                |x| x[0] * x[1] + x[2],
                |x, g| g.copy_from_slice(&[x[1], x[0], 1.0]),
            )
            .expect("registers");
            rt::equation(|| {
                let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
                f.call(&[x, y, z])
            })
        }
        _ => panic!("{usage}"),
    }
    .expect("builds");
    let mut eq = eq;
    let (gradient, kind) = match lane {
        "value" => (false, LaneKind::Value),
        "gradient" => (true, LaneKind::Gradient),
        _ => panic!("{usage}"),
    };
    match backend {
        "interp" => {
            eq.set_options(Options::with_backend(Backend::Interpret));
        }
        "jit" => {
            eq.set_options(Options::with_backend(Backend::Compile));
            assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
        }
        _ => panic!("{usage}"),
    }
    // Warm-up: the lane is built and lowered before the count.
    let _ = measured(&eq, gradient, 1);
    println!("{}", measured(&eq, gradient, calls));
}
