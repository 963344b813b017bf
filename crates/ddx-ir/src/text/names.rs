//! The rule for a name of the text syntax: what [`super::is_name`] accepts and, for a name
//! it refuses, why ([`why_not_a_name`]).
//!
//! A name is a Python identifier as Python's own parser would keep it apart from every
//! other: `XID_Start` or `_`, then `XID_Continue` ([`unicode_ident`]); already in Unicode
//! NFKC form ([`unicode_normalization`]), because Python normalises identifiers with NFKC,
//! so `ﬁ` and `fi`, or fullwidth `ｘ` and `x`, are one identifier to Python and would be
//! two symbols here; with no default-ignorable code point (an invisible character such as
//! the zero-width joiner in `x\u{200d}`, which `XID_Continue` holds but nobody can see);
//! not a Python keyword (`lambda`, `if`: Python's syntax cannot spell them as names); and
//! no built-in function's name (`sin` in a text is always the function).
//!
//! Names are refused, never normalised: a name an equation reports is the name it was
//! given, and two names that are different strings are different names that no reader
//! (Python or a person) takes for one.

use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// Python's keywords (`keyword.kwlist`, Python 3.13): none can be a name in Python's
/// syntax, so none is a name of the text syntax. The soft keywords (`match`, `case`,
/// `type`, `_`) are names in Python, and here.
pub const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Unicode's `Default_Ignorable_Code_Point` ranges (DerivedCoreProperties.txt, Unicode
/// 16.0; inclusive, sorted): characters a renderer draws as nothing.
const DEFAULT_IGNORABLE: [(u32, u32); 17] = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1_BCA0, 0x1_BCA3),
    (0x1_D173, 0x1_D17A),
    (0xE_0000, 0xE_0FFF),
];

/// Whether `c` is a default-ignorable code point (drawn as nothing).
pub fn is_invisible(c: char) -> bool {
    let c = u32::from(c);
    DEFAULT_IGNORABLE
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Whether `name` is in NFKC form (Python's form of an identifier).
pub fn is_nfkc(name: &str) -> bool {
    match is_nfkc_quick(name.chars()) {
        IsNormalized::Yes => true,
        IsNormalized::No => false,
        IsNormalized::Maybe => name.nfkc().eq(name.chars()),
    }
}

/// `name` in NFKC form: the identifier Python reads for it (for messages: `ﬁ` → `fi`).
pub fn nfkc(name: &str) -> String {
    name.nfkc().collect()
}

/// Why `name` is not a name of the text syntax (the rule of the module), or `None` when
/// it is one; the reason reads after "cannot name a symbol: ".
pub fn why_not_a_name(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    let identifier = chars.next().is_some_and(super::lexer::is_name_start)
        && chars.all(super::lexer::is_name_continue);
    if name.is_empty() {
        Some("a name is not empty")
    } else if !identifier {
        Some(
            "a name is a Python identifier (a letter or `_`, then letters, digits or `_`; \
             Unicode letters such as `α` or `θ1` included), as the text syntax reads names",
        )
    } else if crate::Op::from_call_name(name).is_some() {
        Some("it is a built-in function's name, which a text always reads as the function")
    } else if KEYWORDS.contains(&name) {
        Some(
            "it is a Python keyword, which Python's syntax, and the text's, cannot spell as a name",
        )
    } else if name.chars().any(is_invisible) {
        Some(
            "it holds an invisible character (a default-ignorable code point, such as the \
             zero-width joiner U+200D), so it would look like another name and differ from it",
        )
    } else if !is_nfkc(name) {
        Some(
            "it is not in Unicode NFKC form, the form Python reads identifiers in (`ﬁ` is \
             `fi`, fullwidth `ｘ` is `x`): write the NFKC form, so that names Python takes \
             for one are one here",
        )
    } else {
        None
    }
}
