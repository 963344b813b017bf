//! `ddx::on_calling_thread`: a batch large enough to be split across rayon's threads runs
//! on the calling thread alone inside it, with the same bits as the split batch.
//!
//! The truth: the threads user code was called on (recorded by the user function itself),
//! and the split batch's answers, bit for bit.

use ddx::{rt, Backend, LaneKind, Options, UserFunction};
use std::collections::HashSet;
use std::sync::Mutex;
use std::thread::ThreadId;

static SEEN: Mutex<Option<HashSet<ThreadId>>> = Mutex::new(None);

fn note_thread() {
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    seen.get_or_insert_with(HashSet::new)
        .insert(std::thread::current().id());
}

fn threads_seen() -> HashSet<ThreadId> {
    SEEN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default()
}

#[test]
fn batches_inside_on_calling_thread_call_user_code_on_that_thread_only() {
    // sinh with its partial, noting the thread of every call.
    let f = UserFunction::new(
        "noted_sinh",
        1,
        |x| {
            note_thread();
            x[0].sinh()
        },
        |x, g| {
            note_thread();
            g[0] = x[0].cosh();
        },
    )
    .unwrap();
    let eq = rt::equation(|| f.call(&[rt::var("x") * rt::var("y")]) + rt::var("y")).unwrap();
    assert!(eq.calls_user_functions());
    assert!(!rt::equation(|| rt::var("x").sinh())
        .unwrap()
        .calls_user_functions());
    // Past PARALLEL_WORK instruction-points for any lane of a few instructions.
    let len = ddx::PARALLEL_WORK + 4099;
    let xs: Vec<f64> = (0..len).map(|i| (i % 977) as f64 * 1e-3 - 0.4).collect();
    let ys: Vec<f64> = (0..len).map(|i| (i % 613) as f64 * 2e-3 - 0.6).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut eq = eq.clone();
        eq.set_options(Options::with_backend(backend));
        eq.wait_for_kernel_of(LaneKind::Jacobian);
        let jacobian = |values: &mut Vec<f64>, partials: &mut Vec<Vec<f64>>| {
            let [dx, dy] = partials.as_mut_slice() else {
                unreachable!()
            };
            eq.jacobian_batch(&[&xs, &ys], &mut [values], &mut [dx, dy])
                .unwrap();
        };
        let fresh = || (vec![0.0; len], vec![vec![0.0; len]; 2]);
        // Split across the pool's threads: more than one of them runs user code (a
        // loaded machine may leave the stealing threads asleep once; not five times).
        let split = |v: &mut Vec<f64>, j: &mut Vec<Vec<f64>>| {
            (0..5).any(|_| {
                let _ = threads_seen();
                pool.install(|| jacobian(v, j));
                threads_seen().len() > 1
            })
        };
        let (mut split_v, mut split_j) = fresh();
        assert!(
            split(&mut split_v, &mut split_j),
            "the batch was not split: the test proves nothing"
        );
        let (mut one_v, mut one_j) = fresh();
        let caller = pool.install(|| {
            ddx::on_calling_thread(|| jacobian(&mut one_v, &mut one_j));
            std::thread::current().id()
        });
        assert_eq!(threads_seen(), HashSet::from([caller]), "{backend:?}");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&split_v), bits(&one_v));
        for k in 0..2 {
            assert_eq!(bits(&split_j[k]), bits(&one_j[k]));
        }
        // The setting ends with the call: the next batch is split again.
        assert!(split(&mut one_v, &mut one_j));
    }
}
