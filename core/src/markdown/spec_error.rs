//! An exception the Python specification raises for an input, which the Markdown port returns
//! instead (a leaf of `markdown`: its parts and `to_markdown` name it without a circle).

/// An exception the Python specification raises for this input: its type and message.
#[derive(Debug, PartialEq)]
pub struct SpecError {
    pub kind: &'static str,
    pub message: String,
}

impl SpecError {
    pub(super) fn assertion(message: String) -> SpecError {
        SpecError { kind: "AssertionError", message }
    }

    pub(super) fn value(message: String) -> SpecError {
        SpecError { kind: "ValueError", message }
    }
}
