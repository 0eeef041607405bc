//! SHA-256 digests written as lowercase hex: how Basalt names a definition's content (managed
//! objects, remote schema definitions, captured trigger functions) so that a change shows as a
//! different name. One place, so every caller writes the same text in one allocation.

use sha2::{Digest, Sha256};
use std::fmt::Write;

/// The SHA-256 of `data` in lowercase hex (64 characters).
pub fn sha256_hex(data: &[u8]) -> String {
    hex_after("", data)
}

/// `sha256:<hex>`: the digest of `data` tagged with its algorithm, as stored in the catalog.
pub fn sha256_tagged(data: &[u8]) -> String {
    hex_after("sha256:", data)
}

fn hex_after(prefix: &str, data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut out = String::with_capacity(prefix.len() + 2 * digest.len());
    out.push_str(prefix);
    for byte in digest {
        // Writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_lowercase_hex_of_sha256() {
        // The SHA-256 of "abc" (FIPS 180-2, appendix B.1).
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_hex(b"abc"), abc);
        assert_eq!(sha256_tagged(b"abc"), format!("sha256:{abc}"));
    }
}
