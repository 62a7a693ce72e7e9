//! An index file (`.rci`, the dense tables of a bundle): any bytes give a typed
//! error or an index that searches without panicking.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use routecore_core::persist;

mod common;

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = common::framed(data, persist::HEADER_LEN) else {
        return;
    };
    if let Ok(ix) = persist::from_bytes(&bytes, Path::new("fuzz.rci")) {
        if ix.len() > 0 {
            let q = vec![0.5f32; ix.dim()];
            let _ = ix.search(&q, 3.min(ix.len()));
        }
    }
});
