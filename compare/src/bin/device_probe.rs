//! Where the device's time goes on one lane: the lane's OpenCL C built with compiler
//! options of the caller's choosing (the NVIDIA driver's `-cl-nv-verbose` prints each
//! kernel's registers and spills in the build log) and timed at each work-group size, on
//! device-resident columns. A measuring tool for the device backend, not part of it.
//!
//! Run: `device_probe MODEL LANE [--points N] [--options "…"]… [--remat R]… [--local L]…
//! [--dump]`, MODEL one of `huber`, `regsol16`, `regsol32`, `uniquac16`; LANE a lane name
//! (`gradient`). Each `--options` and each `--remat` (`rule`, the default; `off`, the plain
//! kernel; `BUDGET/SEGMENT[/CONE[/GROWTH[/SCHEDULE]]]`, SCHEDULE 1 for demand order; see `ddx::cl::Remat`) adds builds to compare (every pair);
//! each build's outputs are checked bit for bit against the first build's. `--local`
//! picks the work-group sizes (default 32, 64, 128, 256); `--dump` prints the source
//! and stops.

use ddx::cl::Remat;
use ddx::{Equation, LaneKind};
use ddx_models::thermo::{RegularSolution, ThermoData, Uniquac};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::{cl_double, cl_ulong, CL_BLOCKING};
use std::time::Instant;

fn model(name: &str) -> Equation {
    match name {
        "huber" => {
            let data = [(0.0, 2.00), (1.0, 1.21), (2.0, 0.74), (3.0, 0.45)];
            ddx::rt::equation(|| {
                let a = ddx::rt::var("a");
                let b = ddx::rt::var("b");
                let mut loss = ddx::Expr::from(0.0);
                for &(t, y) in &data {
                    let r = y - a * (-b * t).exp();
                    loss += ddx::select(r.abs().lt(0.05), r * r, 0.05 * (2.0 * r.abs() - 0.05));
                }
                loss
            })
            .expect("builds")
        }
        "regsol16" => ddx_models::equation(&RegularSolution::new(16)).expect("builds"),
        "regsol32" => ddx_models::equation(&RegularSolution::new(32)).expect("builds"),
        "uniquac16" => {
            let data = ThermoData::bundled().expect("thermo data");
            ddx_models::equation(&Uniquac::new(&data, 16).expect("16")).expect("builds")
        }
        other => panic!("unknown model {other}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (name, lane) = (&args[1], &args[2]);
    let kind = *LaneKind::ALL
        .iter()
        .find(|k| k.name() == lane.as_str())
        .expect("a lane name");
    let points: usize = args
        .iter()
        .position(|a| a == "--points")
        .map(|i| args[i + 1].parse().expect("a count"))
        .unwrap_or(10_000_000);
    let mut builds: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == "--options")
        .map(|(i, _)| args[i + 1].clone())
        .collect();
    if builds.is_empty() {
        builds.push(String::new());
    }
    let remats: Vec<(String, Remat)> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == "--remat")
        .map(|(i, _)| (args[i + 1].clone(), remat(&args[i + 1])))
        .collect();
    let remats = if remats.is_empty() {
        vec![("rule".to_string(), Remat::RULE)]
    } else {
        remats
    };
    let locals: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == "--local")
        .map(|(i, _)| args[i + 1].parse().expect("a work-group size"))
        .collect();
    let locals = if locals.is_empty() {
        vec![32, 64, 128, 256]
    } else {
        locals
    };
    let eq = model(name);
    let lane_graph = eq.lane(kind).unwrap();
    if args.iter().any(|a| a == "--dump") {
        println!("{}", ddx::cl::source_with(lane_graph, remats[0].1));
        return;
    }
    let (inputs, outputs) = (
        lane_graph.symbols + lane_graph.seeds,
        lane_graph.outputs.len(),
    );
    println!(
        "{name} {lane}: {} nodes, {inputs} inputs, {outputs} outputs, {points} points",
        lane_graph.graph.len(),
    );
    let device = get_platforms()
        .expect("platforms")
        .iter()
        .flat_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default())
        .map(Device::new)
        .next()
        .expect("a device");
    println!("device: {}", device.name().unwrap_or_default());
    let context = Context::from_device(&device).expect("context");
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, 0).expect("queue");
    let mut input = unsafe {
        Buffer::<cl_double>::create(
            &context,
            CL_MEM_READ_ONLY,
            inputs * points,
            std::ptr::null_mut(),
        )
    }
    .expect("input");
    let output = unsafe {
        Buffer::<cl_double>::create(
            &context,
            CL_MEM_WRITE_ONLY,
            outputs * points,
            std::ptr::null_mut(),
        )
    }
    .expect("output");
    let host: Vec<f64> = (0..inputs * points)
        .map(|i| 0.01 + 0.19 * ((i as f64 * 0.618_033_988_75).fract()))
        .collect();
    unsafe { queue.enqueue_write_buffer(&mut input, CL_BLOCKING, 0, &host, &[]) }.expect("write");
    let mut first: Option<Vec<f64>> = None;
    for (options, (remat_name, remat)) in builds
        .iter()
        .flat_map(|o| remats.iter().map(move |r| (o, r)))
    {
        let source = ddx::cl::source_with(lane_graph, *remat);
        let statements = source.matches("const double").count();
        println!(
            "\nremat {remat_name}: {statements} statements, {} bytes of source",
            source.len()
        );
        let start = Instant::now();
        let program = match Program::create_and_build_from_source(&context, &source, options) {
            Ok(p) => p,
            Err(log) => {
                println!("options {options:?}: refused\n{log}");
                continue;
            }
        };
        let built = start.elapsed();
        let log = program.get_build_log(device.id()).unwrap_or_default();
        println!(
            "\noptions {options:?}: built in {built:.2?}; log:\n{}",
            log.trim()
        );
        let kernel = Kernel::create(&program, &format!("ddx_{lane}")).expect("kernel");
        let (stride, count) = (points as cl_ulong, points as cl_ulong);
        unsafe {
            kernel.set_arg(0, &input.get()).expect("arg");
            kernel.set_arg(1, &output.get()).expect("arg");
            kernel.set_arg(2, &stride).expect("arg");
            kernel.set_arg(3, &count).expect("arg");
            kernel.set_arg(4, &(0 as cl_ulong)).expect("arg");
        }
        for &local in &locals {
            let global = points.div_ceil(local) * local;
            let mut times = Vec::new();
            for _ in 0..6 {
                let t = Instant::now();
                let launched = unsafe {
                    queue.enqueue_nd_range_kernel(
                        kernel.get(),
                        1,
                        std::ptr::null(),
                        &global,
                        &local,
                        &[],
                    )
                };
                if let Err(e) = launched {
                    println!("  local {local}: launch failed: {e}");
                    break;
                }
                queue.finish().expect("finish");
                times.push(t.elapsed().as_secs_f64());
            }
            if times.len() > 1 {
                times.remove(0);
                times.sort_by(f64::total_cmp);
                let median = times[times.len() / 2];
                println!(
                    "  local {local}: {:.3} ns/point",
                    median * 1e9 / points as f64
                );
            }
        }
        let mut answer = vec![0.0; outputs * points];
        unsafe { queue.enqueue_read_buffer(&output, CL_BLOCKING, 0, &mut answer, &[]) }
            .expect("read");
        match &first {
            None => first = Some(answer),
            Some(f) => {
                let differ = f
                    .iter()
                    .zip(&answer)
                    .filter(|(a, b)| a.to_bits() != b.to_bits())
                    .count();
                println!("  outputs differing in any bit from the first build's: {differ}");
            }
        }
    }
}

/// `rule`, `off` or `BUDGET/SEGMENT[/CONE[/GROWTH[/SCHEDULE]]]` (SCHEDULE 1: [`Remat::schedule`]).
fn remat(s: &str) -> Remat {
    match s {
        "rule" => Remat::RULE,
        "off" => Remat::OFF,
        _ => {
            let v: Vec<usize> = s.split('/').map(|x| x.parse().expect("a count")).collect();
            Remat {
                live_budget: v[0],
                segment: v[1],
                cone: v.get(2).copied().unwrap_or(v[1]),
                growth: v.get(3).copied().unwrap_or(3),
                max_nodes: usize::MAX,
                second_order: true,
                schedule: v.get(4) == Some(&1),
            }
        }
    }
}
