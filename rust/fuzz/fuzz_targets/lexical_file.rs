//! A lexical index file (`.rlx`, the BM25 tables of a bundle): any bytes give a
//! typed error or an index that scores without panicking.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use routecore_core::persist::lexical;

mod common;

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = common::framed(data, lexical::HEADER_LEN) else {
        return;
    };
    if let Ok(ix) = lexical::from_bytes(&bytes, Path::new("fuzz.rlx")) {
        let _ = ix.score_labels("reset password VPN serveur 重置 máy chủ", 8);
        let _ = ix.score_docs("incident INC12345 kafka");
    }
});
