//! Strings that enter from Python: names (of symbols, parameters, user functions; keys
//! of points and parameter values) and texts.
//!
//! Every `str` argument that crosses into Rust is read by one of the extractors here,
//! [`Name`], [`Text`] or [`FilePath`], never as a bare `&str`/`String`/`PathBuf`: a Python
//! `str` may hold a lone surrogate (`"a\ud800"`), which is no character and has no UTF-8
//! (or file-system) form, and PyO3's own extraction raises `UnicodeEncodeError` for it;
//! these raise `ddx.Error` with the code the argument has for any other bad value
//! (`bad_name` for a name, `bad_syntax` for a text, `archive_io` for a file's path),
//! naming the string by its `repr`. (The options' strings, `cache_dir` and `device`, are
//! checked by `ddx.Options`'s validators, as its other fields are.)
//!
//! A name from Python is a name by [`why_not_a_name`]: the text syntax's rule (which the
//! Rust library's `ddx::ir::text::why_not_a_name` states, from Unicode 16 tables), and
//! also an identifier to the running Python (`str.isidentifier()`), whose Unicode tables
//! may be older (Python 3.11 has Unicode 14: `x・`, U+30FB, is `XID_Continue` only since
//! Unicode 15.1). So every name the package accepts can be written in the user's Python.

use crate::errors::{raise, OrRaise};
use ddx::Errc;
use pyo3::exceptions::PyUnicodeEncodeError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::path::PathBuf;

/// A `str` argument read as a name: its UTF-8 text.
///
/// # Errors
/// `TypeError` for what is not a `str` (PyO3's message); `ddx.Error` `bad_name` for a
/// `str` holding a lone surrogate.
pub(crate) struct Name(pub(crate) String);

/// A `str` argument read as a text of the syntax: its UTF-8 text.
///
/// # Errors
/// `TypeError` for what is not a `str`; `ddx.Error` `bad_syntax` for a `str` holding a
/// lone surrogate.
pub(crate) struct Text(pub(crate) String);

/// A path argument (a `str` or `os.PathLike`) read as a file's path, as PyO3 reads a
/// `PathBuf` (`os.fspath`, then `os.fsencode`).
///
/// # Errors
/// `TypeError` for what is no path; `ddx.Error` `archive_io` for one holding a lone
/// surrogate, which no file's name holds.
pub(crate) struct FilePath(pub(crate) PathBuf);

impl<'a, 'py> FromPyObject<'a, 'py> for FilePath {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match obj.extract::<PathBuf>() {
            Ok(p) => Ok(FilePath(p)),
            Err(e) if e.is_instance_of::<PyUnicodeEncodeError>(obj.py()) => {
                let repr = obj
                    .repr()
                    .map_or_else(|_| "?".to_string(), |r| r.to_string());
                let code = Errc::ArchiveIo;
                Err(raise(
                    obj.py(),
                    code,
                    format!(
                        "{code}: the path {} holds a lone surrogate (a code point from \
                         U+D800 to U+DFFF alone), which no file's name holds: the file \
                         system cannot encode it",
                        ddx::ir::text::quoted(&repr)
                    ),
                ))
            }
            Err(e) => Err(e),
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Name {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Name(
            utf8(&obj.cast::<PyString>()?.to_owned(), Errc::BadName, "a name")?.to_string(),
        ))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Text(
            utf8(
                &obj.cast::<PyString>()?.to_owned(),
                Errc::BadSyntax,
                "a text",
            )?
            .to_string(),
        ))
    }
}

/// The UTF-8 text of `s`, given as `what` (`"a name"`, `"a text"`).
///
/// # Errors
/// `ddx.Error` `code` when `s` holds a lone surrogate, which has no UTF-8 form.
pub(crate) fn utf8<'a>(s: &'a Bound<'_, PyString>, code: Errc, what: &str) -> PyResult<&'a str> {
    match s.to_str() {
        Ok(t) => Ok(t),
        Err(_) => {
            let repr = s.repr().map_or_else(|_| "?".to_string(), |r| r.to_string());
            let repr = ddx::ir::text::quoted(&repr);
            Err(raise(
                s.py(),
                code,
                format!(
                    "{code}: {repr} holds a lone surrogate (a code point from U+D800 to \
                     U+DFFF alone), which is no character and has no UTF-8 form; {what} is a \
                     str of characters"
                ),
            ))
        }
    }
}

/// Why `name` is not a name for Python (the rule of the module), or `None`; the reason
/// reads after "cannot name a symbol: ".
pub(crate) fn why_not_a_name(py: Python<'_>, name: &str) -> Option<&'static str> {
    if let Some(why) = ddx::ir::text::why_not_a_name(name) {
        return Some(why);
    }
    let identifier = PyString::new(py, name)
        .call_method0("isidentifier")
        .and_then(|b| b.is_truthy())
        .unwrap_or(false);
    (!identifier).then_some(
        "this Python's str.isidentifier() is False for it: its Unicode tables \
         (unicodedata.unidata_version) are older than the name's characters, so Python could \
         not write it as a name",
    )
}

/// Refuses `key`, a name the equation does not have, as a name when it is none: a point's
/// or parameter values' key that breaks the rule is `bad_name` (it could name nothing
/// in any equation the package builds or loads), else `None` (the caller's
/// `unknown_symbol` stands).
pub(crate) fn not_a_key(py: Python<'_>, key: &str, what: &'static str) -> Option<PyErr> {
    check(py, key, what).err()
}

/// Refuses a name of `what` (`"a symbol"`, `"a parameter"`) that [`why_not_a_name`]
/// refuses.
///
/// # Errors
/// `ddx.Error` `bad_name` naming it and the rule.
pub(crate) fn check(py: Python<'_>, name: &str, what: &'static str) -> PyResult<()> {
    let Some(why) = why_not_a_name(py, name) else {
        return Ok(());
    };
    Err(ddx::Error::BadName {
        name: name.to_string(),
        what,
        why,
    })
    .or_raise()
}
