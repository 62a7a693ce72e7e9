//! The word tokenizer of the lexical index.
//!
//! Every character is folded first ([`fold`]): compatibility decomposition
//! (NFKD), combining marks dropped (canonical combining class ≠ 0, as Python's
//! `unicodedata.combining`: é → e, ợ → o), Unicode lower case, and a few
//! letters NFKD leaves whole folded by hand (đ → d, œ → oe, ß → ss, ł → l,
//! ø → o, ...). Kana and Hangul syllables are kept as written: NFKD would split
//! a syllable into jamo and a voiced kana into kana + dakuten.
//!
//! The folded text is then cut into
//! - *runs*: alphanumeric characters with the connectors `_ - .` inside them
//!   (connectors at either end are trimmed: `logs.` → `logs`). A run holding a
//!   connector or a camelCase boundary (a lower-case letter followed by an
//!   upper-case one, judged on the case before folding) gives the whole run
//!   and then its parts: `ha_get_logs` → `ha_get_logs ha get logs`,
//!   `searchFlights` → `searchflights search flights`; with both, each
//!   connector segment comes before its camelCase parts (`ha_getLogs` →
//!   `ha_getlogs ha getlogs get logs`), so every token tokenizes to tokens
//!   of the same text. Letters and digits stay together: `INC12291856` →
//!   `inc12291856`, so identifiers match whole;
//! - *CJK stretches* (Han, Hiragana, Katakana, Hangul): each character is a
//!   unigram, then each adjacent pair a bigram: `服务器` → `服 务 器 服务 务器`.
//!
//! Anything else separates tokens. Every token is non-empty and folded
//! (`fold(t) == t`).
//!
//! Normalisation uses `unicode-normalization-alignments`, the copy of
//! `unicode-normalization` that `tokenizers` already links: no new crate. Its
//! tables are Unicode 9.0; the decompositions of letters that existed then
//! never change (Unicode's stability policy), which covers French, English,
//! Vietnamese and Chinese.

use unicode_normalization_alignments::char::{canonical_combining_class, decompose_compatible};

/// The connectors kept inside a run.
fn is_connector(c: char) -> bool {
    matches!(c, '_' | '-' | '.')
}

/// Han, Hiragana, Katakana and Hangul, after folding.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3005 | 0x3007                // 々 〇
        | 0x3040..=0x30FF              // Hiragana, Katakana
        | 0x31F0..=0x31FF              // Katakana phonetic extensions
        | 0x3400..=0x4DBF              // CJK extension A
        | 0x4E00..=0x9FFF              // CJK unified ideographs
        | 0xF900..=0xFAFF              // CJK compatibility ideographs
        | 0x1100..=0x11FF              // Hangul jamo
        | 0x3130..=0x318F              // Hangul compatibility jamo
        | 0xA960..=0xA97F | 0xD7B0..=0xD7FF
        | 0xAC00..=0xD7A3              // Hangul syllables
        | 0x20000..=0x323AF            // CJK extensions B-H, compatibility supplement
    )
}

/// Kana and Hangul syllables: taken as written (see the module docs).
fn kept_whole(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0xAC00..=0xD7A3)
}

/// Letters NFKD does not decompose, folded as a reader without the key would type them.
fn fold_letter(c: char) -> Option<&'static str> {
    Some(match c {
        'đ' | 'ð' => "d",
        'ħ' => "h",
        'ı' => "i",
        'ł' => "l",
        'ø' => "o",
        'œ' => "oe",
        'æ' => "ae",
        'ß' => "ss",
        'ς' => "σ",
        _ => return None,
    })
}

/// Fold one character: `emit(c, upper, lower)` for each output character,
/// with the case of the source letter before lower-casing.
#[inline]
pub(crate) fn fold_char(c: char, emit: &mut impl FnMut(char, bool, bool)) {
    if c.is_ascii() {
        return emit(
            c.to_ascii_lowercase(),
            c.is_ascii_uppercase(),
            c.is_ascii_lowercase(),
        );
    }
    if kept_whole(c) {
        return emit(c, false, false);
    }
    decompose_compatible(c, |d| {
        if canonical_combining_class(d) != 0 {
            return;
        }
        // Case counts only where it maps: U+1F150 '🅐' is "uppercase" with no lowercase, so
        // flagging it would cut a camelCase boundary in its folded form that the original lacked.
        let up = d.is_uppercase() && d.to_lowercase().ne(std::iter::once(d));
        let lo = d.is_lowercase() && d.to_uppercase().ne(std::iter::once(d));
        for l in d.to_lowercase() {
            decompose_compatible(l, |e| {
                if canonical_combining_class(e) != 0 {
                    return;
                }
                match fold_letter(e) {
                    Some(s) => s.chars().for_each(|x| emit(x, up, lo)),
                    None => emit(e, up, lo),
                }
            });
        }
    });
}

/// `text` folded (see the module docs) without being split: the form of
/// every token, and of the stop words the index compares them with.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        fold_char(c, &mut |x, _, _| out.push(x));
    }
    out
}

/// The tokens of `text`, in order (see the module docs).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_owned()));
    out
}

/// Call `f` with each token of `text`, in order, without allocating per token.
pub fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let mut t = Cutter::default();
    for c in text.chars() {
        fold_char(c, &mut |x, up, lo| t.push(x, up, lo, &mut f));
    }
    t.flush_run(&mut f);
    t.flush_cjk(&mut f);
}

/// The state of [`for_each_token`]: the current run and CJK stretch.
#[derive(Default)]
struct Cutter {
    /// Folded run, connectors included.
    run: String,
    /// Byte offsets in `run` where a camelCase part starts.
    breaks: Vec<usize>,
    /// Whether the last character of the run is lower case (before folding).
    last_lower: bool,
    cjk: Vec<char>,
    buf: String,
}

impl Cutter {
    fn push(&mut self, c: char, upper: bool, lower: bool, f: &mut impl FnMut(&str)) {
        if c.is_alphanumeric() {
            if is_cjk(c) {
                self.flush_run(f);
                self.cjk.push(c);
                return;
            }
            self.flush_cjk(f);
            if upper && self.last_lower {
                self.breaks.push(self.run.len());
            }
            self.run.push(c);
            self.last_lower = lower;
        } else {
            self.flush_cjk(f);
            if is_connector(c) {
                if !self.run.is_empty() {
                    self.run.push(c);
                }
                self.last_lower = false;
            } else {
                self.flush_run(f);
            }
        }
    }

    /// Emit the run, then its connector segments (when it has connectors),
    /// each followed by its camelCase parts (when it has boundaries).
    fn flush_run(&mut self, f: &mut impl FnMut(&str)) {
        let whole = self.run.trim_end_matches(is_connector);
        if !whole.is_empty() {
            f(whole);
            let joined = whole.contains(is_connector);
            let mut start = 0;
            for seg in whole.split(is_connector) {
                let end = start + seg.len();
                if !seg.is_empty() {
                    if joined {
                        f(seg);
                    }
                    let mut from = start;
                    for &b in self.breaks.iter().filter(|&&b| b > start && b < end) {
                        f(&whole[from..b]);
                        from = b;
                    }
                    if from > start {
                        f(&whole[from..end]);
                    }
                }
                start = end + 1; // connectors are one byte
            }
        }
        self.run.clear();
        self.breaks.clear();
        self.last_lower = false;
    }

    fn flush_cjk(&mut self, f: &mut impl FnMut(&str)) {
        for &c in &self.cjk {
            self.buf.clear();
            self.buf.push(c);
            f(&self.buf);
        }
        for w in self.cjk.windows(2) {
            self.buf.clear();
            self.buf.extend(w);
            f(&self.buf);
        }
        self.cjk.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        tokens(s)
    }

    #[test]
    fn french_sentence_with_an_incident_id() {
        assert_eq!(
            toks("Peux-tu me donner l'état de l'incident INC20481234 ?"),
            [
                "peux-tu",
                "peux",
                "tu",
                "me",
                "donner",
                "l",
                "etat",
                "de",
                "l",
                "incident",
                "inc20481234"
            ]
        );
    }

    #[test]
    fn tool_names_give_the_whole_and_the_parts() {
        assert_eq!(toks("ha_get_logs"), ["ha_get_logs", "ha", "get", "logs"]);
        assert_eq!(
            toks("getSystemLogs"),
            ["getsystemlogs", "get", "system", "logs"]
        );
        assert_eq!(
            toks("call api.v2-searchFlights now."),
            [
                "call",
                "api.v2-searchflights",
                "api",
                "v2",
                "searchflights",
                "search",
                "flights",
                "now"
            ]
        );
        assert_eq!(toks("see the logs."), ["see", "the", "logs"]);
        assert_eq!(toks("--x__ ... _"), ["x"]);
        assert_eq!(toks("INC12291856"), ["inc12291856"]);
        assert_eq!(toks("HTTPServer"), ["httpserver"]);
        assert_eq!(toks("iPhone"), ["iphone", "i", "phone"]);
    }

    #[test]
    fn chinese_unigrams_then_bigrams() {
        assert_eq!(
            toks("服务器宕机了"),
            [
                "服", "务", "器", "宕", "机", "了", "服务", "务器", "器宕", "宕机", "机了"
            ]
        );
        assert_eq!(
            toks("Kafka集群，GMON告警"),
            ["kafka", "集", "群", "集群", "gmon", "告", "警", "告警"]
        );
        assert_eq!(toks("服-务"), ["服", "务"]);
    }

    #[test]
    fn vietnamese_diacritics_fold() {
        assert_eq!(
            toks("Tôi không đăng nhập được"),
            ["toi", "khong", "dang", "nhap", "duoc"]
        );
        assert_eq!(toks("ĐƯỢC"), ["duoc"]);
    }

    #[test]
    fn folding_details() {
        assert_eq!(
            fold("Œuvre ÉTÉ straße ﬁle ＡＢＣ１"),
            "oeuvre ete strasse file abc1"
        );
        // Hangul syllables and voiced kana stay whole.
        assert_eq!(toks("한국"), ["한", "국", "한국"]);
        assert_eq!(toks("がぎ"), ["が", "ぎ", "がぎ"]);
        // Compatibility ideographs fold to the unified ones.
        assert_eq!(fold("\u{F900}"), "\u{8C48}");
        assert!(toks("").is_empty() && toks(" ,;!? ").is_empty());
    }
}
