//! YAML as overseer writes it (`overseer crd`, `ps -o yaml`) and as kubectl writes it:
//! a string on one line however long (the library would fold it, wrapping regular
//! expressions and CEL rules across lines), and a literal block for a string of
//! several lines.

use serde::Serialize;

/// `value` as one YAML document.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, serde_saphyr::SerializeError> {
    let options = serde_saphyr::ser_options! { folded_wrap_chars: usize::MAX };
    serde_saphyr::to_string_with_options(value, options)
}
