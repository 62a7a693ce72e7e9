//! Shared by the targets: the first input byte chooses whether the frame's payload
//! length and CRC are recomputed, so that mutations reach the parser behind the
//! checksum instead of stopping at it.

/// `data[1..]` as given (first byte even) or with its frame resealed (odd).
pub fn framed(data: &[u8], header_len: usize) -> Option<Vec<u8>> {
    let (&mode, rest) = data.split_first()?;
    let mut v = rest.to_vec();
    if mode & 1 == 1 && v.len() >= header_len {
        let payload_len = (v.len() - header_len) as u64;
        v[header_len - 12..header_len - 4].copy_from_slice(&payload_len.to_le_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&v[..header_len - 4]);
        h.update(&v[header_len..]);
        v[header_len - 4..header_len].copy_from_slice(&h.finalize().to_le_bytes());
    }
    Some(v)
}
