//! The CasADi arms, called from Rust with no Python in the loop.
//!
//! - `casadi/r`: the serialized SX gradient `Function` loaded into `libcasadi.so` (shipped
//!   in the PyPI wheel) through CasADi's C API (`include/casadi/casadi_c.h`:
//!   `casadi_c_push_file`, `casadi_c_eval_id`), so CasADi's own virtual machine interprets
//!   it;
//! - `casadi/j`: the C that CasADi's `CodeGenerator` writes for the same `Function`,
//!   compiled by the system C compiler (`cc -O3 -shared -fPIC`) and called through its
//!   generated entry point `int <name>(const double** arg, double** res, long long* iw,
//!   double* w, int mem)`.
//!
//! Both libraries are opened at run time with `libloading`, so the harness builds, and its
//! tests run, on a machine without CasADi; an arm whose library is absent is skipped.
//! Work arrays are allocated once per arm, so a timed call allocates nothing.

use libloading::Library;
use std::ffi::{c_char, c_int, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `casadi_int` of the wheel's build and of the generated C (`long long int`).
type CInt = i64;

type EvalFn =
    unsafe extern "C" fn(*const *const f64, *mut *mut f64, *mut CInt, *mut f64, c_int) -> c_int;
type WorkFn = unsafe extern "C" fn(*mut CInt, *mut CInt, *mut CInt, *mut CInt) -> c_int;

type PushFileFn = unsafe extern "C" fn(*const c_char) -> c_int;
type IdFn = unsafe extern "C" fn(*const c_char) -> c_int;
type WorkIdFn = unsafe extern "C" fn(c_int, *mut CInt, *mut CInt, *mut CInt, *mut CInt) -> c_int;
type CheckoutIdFn = unsafe extern "C" fn(c_int) -> c_int;
type EvalIdFn = unsafe extern "C" fn(
    c_int,
    *const *const f64,
    *mut *mut f64,
    *mut CInt,
    *mut f64,
    c_int,
) -> c_int;

/// Work arrays sized by a `*_work` call.
#[derive(Debug)]
struct Work {
    arg: Vec<*const f64>,
    res: Vec<*mut f64>,
    iw: Vec<CInt>,
    w: Vec<f64>,
}

impl Work {
    fn new(sizes: [CInt; 4]) -> Result<Self, String> {
        let size = |v: CInt| usize::try_from(v).map_err(|_| format!("negative work size {v}"));
        Ok(Self {
            arg: vec![std::ptr::null(); size(sizes[0])?.max(1)],
            res: vec![std::ptr::null_mut(); size(sizes[1])?.max(1)],
            iw: vec![0; size(sizes[2])?.max(1)],
            w: vec![0.0; size(sizes[3])?.max(1)],
        })
    }
}

/// CasADi's C API in `libcasadi.so`: the interpreter behind `casadi/r`.
#[derive(Debug)]
pub struct CasadiRuntime {
    push_file: PushFileFn,
    id: IdFn,
    work_id: WorkIdFn,
    checkout_id: CheckoutIdFn,
    eval_id: EvalIdFn,
    _lib: Library,
}

impl CasadiRuntime {
    /// Opens `libcasadi.so` in `dir` (the `casadi` package folder of the wheel).
    ///
    /// # Errors
    /// A message when the library or one of its C API symbols cannot be loaded.
    pub fn open(dir: &Path) -> Result<Self, String> {
        let path = dir.join("libcasadi.so");
        // SAFETY: loading CasADi runs its static initialisers, which have no preconditions.
        let lib = unsafe { Library::new(&path) }
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
        // SAFETY: each symbol is declared with the signature `casadi_c.h` gives it.
        unsafe {
            Ok(Self {
                push_file: *sym(&lib, b"casadi_c_push_file\0")?,
                id: *sym(&lib, b"casadi_c_id\0")?,
                work_id: *sym(&lib, b"casadi_c_work_id\0")?,
                checkout_id: *sym(&lib, b"casadi_c_checkout_id\0")?,
                eval_id: *sym(&lib, b"casadi_c_eval_id\0")?,
                _lib: lib,
            })
        }
    }

    /// Loads the serialized Function `name` from `file` and prepares it for evaluation.
    ///
    /// # Errors
    /// A message when CasADi refuses the file or does not find the function.
    pub fn function(&self, file: &Path, name: &str) -> Result<InterpretedFunction<'_>, String> {
        let cfile = CString::new(file.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
        let cname = CString::new(name).map_err(|e| e.to_string())?;
        // SAFETY: both are NUL-terminated strings that outlive the calls.
        let id = unsafe {
            if (self.push_file)(cfile.as_ptr()) != 0 {
                return Err(format!("casadi_c_push_file refused {}", file.display()));
            }
            (self.id)(cname.as_ptr())
        };
        if id < 0 {
            return Err(format!("no function {name} in {}", file.display()));
        }
        let mut sizes = [0 as CInt; 4];
        let [a, r, i, w] = &mut sizes;
        // SAFETY: `id` is a loaded function; the four pointers are valid for writes.
        let rc = unsafe { (self.work_id)(id, a, r, i, w) };
        if rc != 0 {
            return Err(format!("casadi_c_work_id failed for {name}"));
        }
        // SAFETY: `id` is a loaded function.
        let mem = unsafe { (self.checkout_id)(id) };
        Ok(InterpretedFunction {
            rt: self,
            id,
            mem,
            work: Work::new(sizes)?,
            name: name.to_string(),
        })
    }
}

/// A serialized CasADi Function evaluated by `libcasadi.so`.
#[derive(Debug)]
pub struct InterpretedFunction<'a> {
    rt: &'a CasadiRuntime,
    id: c_int,
    mem: c_int,
    work: Work,
    name: String,
}

impl InterpretedFunction<'_> {
    /// Evaluates the one-input, one-output Function: `out = f(x)`.
    ///
    /// # Errors
    /// A message when CasADi reports a failure.
    pub fn call(&mut self, x: &[f64], out: &mut [f64]) -> Result<(), String> {
        let w = &mut self.work;
        w.arg[0] = x.as_ptr();
        w.res[0] = out.as_mut_ptr();
        // SAFETY: `arg`/`res`/`iw`/`w` are sized as `casadi_c_work_id` asked; the input
        // and output slices are as long as the Function's dense input and output.
        let rc = unsafe {
            (self.rt.eval_id)(
                self.id,
                w.arg.as_ptr(),
                w.res.as_mut_ptr(),
                w.iw.as_mut_ptr(),
                w.w.as_mut_ptr(),
                self.mem,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("casadi_c_eval_id({}) returned {rc}", self.name))
        }
    }
}

/// The generated C of one Function, compiled and loaded: `casadi/j`.
#[derive(Debug)]
pub struct CompiledFunction {
    eval: EvalFn,
    work: Work,
    name: String,
    _lib: Library,
}

impl CompiledFunction {
    /// Loads `lib` and its entry point `name` (with `name_work`).
    ///
    /// # Errors
    /// A message when the library or a symbol cannot be loaded.
    pub fn open(lib: &Path, name: &str) -> Result<Self, String> {
        // SAFETY: the generated C has no static initialisers.
        let library = unsafe { Library::new(lib) }
            .map_err(|e| format!("cannot load {}: {e}", lib.display()))?;
        let eval_name = format!("{name}\0");
        let work_name = format!("{name}_work\0");
        // SAFETY: the generated C declares both with exactly these signatures.
        let (eval, work): (EvalFn, WorkFn) = unsafe {
            (
                *sym(&library, eval_name.as_bytes())?,
                *sym(&library, work_name.as_bytes())?,
            )
        };
        let mut sizes = [0 as CInt; 4];
        let [a, r, i, w] = &mut sizes;
        // SAFETY: the four pointers are valid for writes.
        unsafe { work(a, r, i, w) };
        Ok(Self {
            eval,
            work: Work::new(sizes)?,
            name: name.to_string(),
            _lib: library,
        })
    }

    /// `out = f(x)`.
    ///
    /// # Errors
    /// A message when the generated code reports a failure.
    pub fn call(&mut self, x: &[f64], out: &mut [f64]) -> Result<(), String> {
        let w = &mut self.work;
        w.arg[0] = x.as_ptr();
        w.res[0] = out.as_mut_ptr();
        // SAFETY: as for `InterpretedFunction::call`; `mem = 0` is the generated code's
        // default memory, which an SX Function never uses.
        let rc = unsafe {
            (self.eval)(
                w.arg.as_ptr(),
                w.res.as_mut_ptr(),
                w.iw.as_mut_ptr(),
                w.w.as_mut_ptr(),
                0,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("{}() returned {rc}", self.name))
        }
    }
}

/// Compiles CasADi's generated C file `c` into a shared library beside it with the system
/// C compiler (`$CC`, else `cc`): `-O3 -shared -fPIC`.
///
/// # Errors
/// The compiler's message when it fails or cannot be run.
pub fn compile(c: &Path) -> Result<PathBuf, String> {
    let so = c.with_extension("so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-O3", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(c)
        .arg("-lm")
        .output()
        .map_err(|e| format!("cannot run {cc}: {e}"))?;
    if out.status.success() {
        Ok(so)
    } else {
        Err(format!(
            "{cc} failed on {}: {}",
            c.display(),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A symbol of `lib`, with a message naming it when absent.
///
/// # Safety
/// `T` must be the symbol's true type.
unsafe fn sym<'l, T>(lib: &'l Library, name: &[u8]) -> Result<libloading::Symbol<'l, T>, String> {
    // SAFETY: forwarded to the caller.
    unsafe { lib.get(name) }.map_err(|e| {
        format!(
            "{}: {e}",
            String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name))
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_library_is_a_message_not_a_crash() {
        let e = CasadiRuntime::open(Path::new("/nonexistent")).unwrap_err();
        assert!(e.contains("libcasadi.so"), "{e}");
        let e = CompiledFunction::open(Path::new("/nonexistent/f.so"), "f").unwrap_err();
        assert!(e.contains("f.so"), "{e}");
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ddx-compare-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn compile_reports_compiler_errors() {
        let dir = scratch("broken");
        let c = dir.join("broken.c");
        std::fs::write(&c, "this is not C").unwrap();
        let e = compile(&c).unwrap_err();
        assert!(e.contains("broken.c") || e.contains("cannot run"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The calling convention of CasADi's generated C, exercised on a hand-written
    /// stand-in (no CasADi needed): `g = ∇(x₀²x₁ + 3x₁) = (2x₀x₁, x₀² + 3)`.
    #[test]
    fn generated_c_convention_round_trips() {
        let dir = scratch("conv");
        let c = dir.join("fake_grad.c");
        std::fs::write(
            &c,
            r#"
typedef long long int casadi_int;
int fake_grad(const double** arg, double** res, casadi_int* iw, double* w, int mem) {
  (void)iw; (void)mem;
  w[0] = arg[0][0] * arg[0][1];
  res[0][0] = 2.0 * w[0];
  res[0][1] = arg[0][0] * arg[0][0] + 3.0;
  return 0;
}
int fake_grad_work(casadi_int* sz_arg, casadi_int* sz_res, casadi_int* sz_iw, casadi_int* sz_w) {
  *sz_arg = 1; *sz_res = 1; *sz_iw = 0; *sz_w = 1;
  return 0;
}
"#,
        )
        .unwrap();
        let Ok(so) = compile(&c) else {
            eprintln!("no C compiler: skipped");
            return;
        };
        let mut f = CompiledFunction::open(&so, "fake_grad").unwrap();
        let mut g = [0.0; 2];
        f.call(&[3.0, 2.0], &mut g).unwrap();
        assert_eq!(g, [12.0, 12.0]);
        assert!(CompiledFunction::open(&so, "missing")
            .unwrap_err()
            .contains("missing"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
