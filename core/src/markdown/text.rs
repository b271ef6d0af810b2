//! placeholder
pub fn to_text(_html: &[u8]) -> Vec<u8> {
    Vec::new()
}
