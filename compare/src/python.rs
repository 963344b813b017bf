//! The Python-hosted peers (`compare/python/peer.py`), spoken to in JSON.
//!
//! CasADi is used from Python only to *build* its Functions (serialized and as generated
//! C); the CasADi arms then run from Rust (see [`crate::casadi`]). JAX runs in a long-lived
//! subprocess that times itself and answers nanoseconds per point, so the pipe and JSON
//! never enter a figure. Python's per-call dispatch does enter the `jax` figure (one
//! `jit(grad)` call per point from Python), which the table says.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// What `peer.py info` found.
#[derive(Clone, Debug, Default)]
pub struct Info {
    /// CPython's version.
    pub python: String,
    /// CasADi's version, when importable.
    pub casadi: Option<String>,
    /// The `casadi` package folder (holds `libcasadi.so`).
    pub casadi_dir: Option<PathBuf>,
    /// JAX's version, when importable.
    pub jax: Option<String>,
    /// Why CasADi or JAX could not be imported.
    pub problems: Vec<String>,
}

/// A model as exported to CasADi.
#[derive(Clone, Debug)]
pub struct Exported {
    /// The harness's model id (`uniquac-16`).
    pub id: String,
    /// The C identifier of its Function (`uniquac_16`).
    pub cid: String,
    /// The serialized Function.
    pub casadi: PathBuf,
    /// The generated C.
    pub c: PathBuf,
    /// CasADi's instruction count for the gradient Function.
    pub instructions: u64,
}

fn run_json(python: &Path, args: &[&std::ffi::OsStr]) -> Result<Value, String> {
    let out = Command::new(python)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {:?} failed: {}",
            python.display(),
            args,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last).map_err(|e| format!("peer answered {last:?}: {e}"))
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Asks `peer.py info` what is installed.
///
/// # Errors
/// A message when the interpreter cannot run the script.
pub fn info(python: &Path, script: &Path) -> Result<Info, String> {
    let v = run_json(python, &[script.as_os_str(), "info".as_ref()])?;
    let mut problems = Vec::new();
    for key in ["casadi_error", "jax_error"] {
        if let Some(e) = string(&v, key) {
            problems.push(e);
        }
    }
    Ok(Info {
        python: string(&v, "python").unwrap_or_default(),
        casadi: string(&v, "casadi"),
        casadi_dir: string(&v, "casadi_dir").map(PathBuf::from),
        jax: string(&v, "jax"),
        problems,
    })
}

/// Builds every model of `models_json` in CasADi SX and writes its gradient Function,
/// serialized and as C, into `out_dir`.
///
/// # Errors
/// A message when the export fails.
pub fn casadi_export(
    python: &Path,
    script: &Path,
    models_json: &Path,
    out_dir: &Path,
) -> Result<Vec<Exported>, String> {
    let v = run_json(
        python,
        &[
            script.as_os_str(),
            "casadi-export".as_ref(),
            models_json.as_os_str(),
            out_dir.as_os_str(),
        ],
    )?;
    let list = v.as_array().ok_or("casadi-export answered no list")?;
    list.iter()
        .map(|e| {
            let s = |k| string(e, k).ok_or(format!("casadi-export: no {k}"));
            Ok(Exported {
                id: s("id")?,
                cid: s("cid")?,
                casadi: PathBuf::from(s("casadi")?),
                c: PathBuf::from(s("c")?),
                instructions: e.get("instructions").and_then(Value::as_u64).unwrap_or(0),
            })
        })
        .collect()
}

/// The JAX server: one subprocess for the whole run.
#[derive(Debug)]
pub struct JaxPeer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The three JAX figures (see `peer.py`).
pub const JAX_VARIANTS: [(&str, &str); 3] =
    [("jit", "jax"), ("scan", "jax/scan"), ("vmap", "jax/vmap")];

impl JaxPeer {
    /// Starts `peer.py jax-serve models_json`, JAX held to the CPU and to one thread (as
    /// every other arm runs on one); its stderr goes to `log`.
    ///
    /// # Errors
    /// A message when it cannot start or does not report ready.
    pub fn spawn(
        python: &Path,
        script: &Path,
        models_json: &Path,
        log: &Path,
    ) -> Result<Self, String> {
        let log = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut child = Command::new(python)
            .arg(script)
            .arg("jax-serve")
            .arg(models_json)
            .env("JAX_PLATFORMS", "cpu")
            .env(
                "XLA_FLAGS",
                "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
            )
            .env("OMP_NUM_THREADS", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("cannot start the JAX peer: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the JAX peer has no pipes".to_string());
        };
        let mut peer = Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        };
        let hello = peer.read()?;
        if hello.get("ready").and_then(Value::as_bool) != Some(true) {
            return Err(format!("the JAX peer said {hello}"));
        }
        Ok(peer)
    }

    fn read(&mut self) -> Result<Value, String> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| format!("reading the JAX peer: {e}"))?;
        if n == 0 {
            return Err("the JAX peer exited (see its log)".to_string());
        }
        let v: Value =
            serde_json::from_str(&line).map_err(|e| format!("the JAX peer said {line:?}: {e}"))?;
        match v.get("error").and_then(Value::as_str) {
            Some(e) => Err(format!("the JAX peer: {e}")),
            None => Ok(v),
        }
    }

    fn request(&mut self, req: &Value) -> Result<Value, String> {
        writeln!(self.stdin, "{req}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("writing to the JAX peer: {e}"))?;
        self.read()
    }

    /// Every variant's gradients at `points` (one `Vec` per point), in [`JAX_VARIANTS`]
    /// order.
    ///
    /// # Errors
    /// The peer's message.
    pub fn gradients(
        &mut self,
        model: &str,
        points: &[Vec<f64>],
    ) -> Result<Vec<Vec<Vec<f64>>>, String> {
        let v = self.request(&json!({"cmd": "gradients", "model": model, "points": points}))?;
        JAX_VARIANTS
            .iter()
            .map(|(key, _)| {
                serde_json::from_value(v.get(*key).cloned().unwrap_or(Value::Null))
                    .map_err(|e| format!("the JAX peer's {key} gradients: {e}"))
            })
            .collect()
    }

    /// Hands the peer the timing points of `model` (compiling and warming every variant);
    /// the batched variants run `batch` points per call.
    ///
    /// # Errors
    /// The peer's message.
    pub fn load(&mut self, model: &str, points: &[Vec<f64>], batch: usize) -> Result<(), String> {
        self.request(&json!({"cmd": "load", "model": model, "points": points, "batch": batch}))
            .map(|_| ())
    }

    /// One timing of `variant`, about `target_ms` long on `clock` (`"cpu"`: the process's
    /// CPU time; `"wall"`): nanoseconds per point.
    ///
    /// # Errors
    /// The peer's message.
    pub fn time(
        &mut self,
        model: &str,
        variant: &str,
        target_ms: f64,
        clock: &str,
    ) -> Result<f64, String> {
        let v = self.request(&json!({
            "cmd": "time", "model": model, "variant": variant,
            "target_ms": target_ms, "clock": clock,
        }))?;
        v.get("ns")
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("the JAX peer answered {v}"))
    }
}

impl Drop for JaxPeer {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"cmd": "quit"}));
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}
