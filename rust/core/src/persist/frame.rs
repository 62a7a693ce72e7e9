//! The frame every index file shares: an 8-byte magic, a `u32` format
//! version, the file kind's own header fields, the payload length (`u64`) and
//! a CRC-32 of all of that and the payload; then the payload.

/// Close `header` (magic, version, own fields) with the payload length and
/// the CRC, and append `payload`.
pub(super) fn seal(mut header: Vec<u8>, payload: &[u8]) -> Vec<u8> {
    header.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&header);
    h.update(payload);
    header.extend_from_slice(&h.finalize().to_le_bytes());
    header.reserve(payload.len());
    header.extend_from_slice(payload);
    header
}

/// Check the frame of `bytes` (a `header_len`-byte header ending with the
/// payload length and CRC): its length, `magic`, `version`, the payload
/// length and the CRC. Returns the header and the payload, or what is wrong.
pub(super) fn open<'a>(
    bytes: &'a [u8],
    magic: &[u8; 8],
    version: u32,
    header_len: usize,
    what: &str,
) -> Result<(&'a [u8], &'a [u8]), String> {
    if bytes.len() < header_len {
        return Err(format!(
            "file is {} bytes, shorter than the {header_len}-byte header",
            bytes.len()
        ));
    }
    if &bytes[..8] != magic {
        return Err(format!("not a routecore {what} (bad magic)"));
    }
    let (header, payload) = bytes.split_at(header_len);
    let found = u32::from_le_bytes(header[8..12].try_into().unwrap());
    if found != version {
        return Err(format!(
            "format version {found}, this build reads {version}"
        ));
    }
    let len_at = header_len - 12;
    let payload_len = u64::from_le_bytes(header[len_at..len_at + 8].try_into().unwrap());
    if payload.len() as u64 != payload_len {
        return Err(format!(
            "payload is {} bytes, header says {payload_len} (truncated?)",
            payload.len()
        ));
    }
    let crc = u32::from_le_bytes(header[header_len - 4..].try_into().unwrap());
    let mut h = crc32fast::Hasher::new();
    h.update(&header[..header_len - 4]);
    h.update(payload);
    if h.finalize() != crc {
        return Err("checksum mismatch (file modified or damaged)".into());
    }
    Ok((header, payload))
}
