//! Stemming of index terms: a Snowball stemmer (`rust-stemmers`) applied to a
//! token after [`super::tokenize`] made it, on documents and queries alike, so
//! "flights" finds "flight" and "recherches" finds "recherche".
//!
//! Only plain words are stemmed: tokens of at least [`MIN_STEM_LEN`] ASCII
//! letters (folding turned French and Vietnamese accents into ASCII).
//! Identifiers with digits (`inc12291856`), whole runs with connectors
//! (`ha_get_logs`; its parts are tokens of their own and are stemmed) and CJK
//! tokens stay as they are. Stop words are stemmed the same way when the index
//! is made, so a stop word still drops every form that stems like it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;

use rust_stemmers::{Algorithm, Stemmer as Snowball};
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};

/// Tokens shorter than this are never stemmed ("is", "as", "les").
pub const MIN_STEM_LEN: usize = 3;

/// The stemmer of a [`super::LexicalIndex`]'s terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Stemmer {
    /// Terms are the tokens as the tokenizer made them.
    #[default]
    None,
    /// Snowball English (Porter2).
    English,
    /// Snowball French.
    French,
}

impl Stemmer {
    /// Every stemmer, in file-code order.
    pub const ALL: [Stemmer; 3] = [Stemmer::None, Stemmer::English, Stemmer::French];

    /// The name used in configs, bundles and errors.
    pub fn name(self) -> &'static str {
        match self {
            Stemmer::None => "none",
            Stemmer::English => "english",
            Stemmer::French => "french",
        }
    }

    /// The code stored in lexical index files (0 = none).
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The stemmer of file code `code`.
    pub fn from_code(code: u32) -> Option<Stemmer> {
        Stemmer::ALL.get(code as usize).copied()
    }

    /// A term maker: call [`Terms::term`] on each token.
    pub fn terms(self) -> Terms {
        Terms(match self {
            Stemmer::None => None,
            Stemmer::English => Some((Snowball::create(Algorithm::English), 0)),
            Stemmer::French => Some((Snowball::create(Algorithm::French), 1)),
        })
    }
}

impl fmt::Display for Stemmer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Stemmer {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Stemmer::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown stemmer {s:?}: expected one of none, english, french"
                ))
            })
    }
}

/// Turns folded tokens into index terms (see the module docs).
pub struct Terms(Option<(Snowball, usize)>);

/// Stems of the words a thread's queries held, per stemmer ([`Terms::with_term`]).
#[derive(Default)]
struct StemCache([FxHashMap<Box<str>, Box<str>>; 2]);

/// [`StemCache`] entries per stemmer before it starts over.
const STEM_CACHE: usize = 8192;

thread_local! {
    static STEMS: RefCell<StemCache> = RefCell::new(StemCache::default());
}

/// Whether `token` is a plain word that stemming applies to.
fn stemmable(token: &str) -> bool {
    token.len() >= MIN_STEM_LEN && token.bytes().all(|c| c.is_ascii_lowercase())
}

impl Terms {
    /// The term of `token` (a folded token of the tokenizer).
    #[inline]
    pub fn term<'a>(&self, token: &'a str) -> Cow<'a, str> {
        match &self.0 {
            Some((s, _)) if stemmable(token) => s.stem(token),
            _ => Cow::Borrowed(token),
        }
    }

    /// `f` of the term of `token`, as [`Terms::term`] makes it; the stems of
    /// query words are kept per thread, since queries repeat their words and a
    /// Snowball stem allocates (0.1 µs a word).
    #[inline]
    pub fn with_term<R>(&self, token: &str, f: impl FnOnce(&str) -> R) -> R {
        let Some((s, slot)) = self.0.as_ref().filter(|_| stemmable(token)) else {
            return f(token);
        };
        STEMS.with(|cell| {
            if let Ok(c) = cell.try_borrow() {
                if let Some(t) = c.0[*slot].get(token) {
                    return f(t);
                }
            }
            let stem = s.stem(token);
            if let Ok(mut c) = cell.try_borrow_mut() {
                let map = &mut c.0[*slot];
                if map.len() >= STEM_CACHE {
                    map.clear();
                }
                map.insert(token.into(), (*stem).into());
            }
            f(&stem)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_plain_words_only() {
        let en = Stemmer::English.terms();
        assert_eq!(en.term("flights"), "flight");
        assert_eq!(en.term("searching"), "search");
        assert_eq!(en.term("inc12291856"), "inc12291856");
        assert_eq!(en.term("ha_get_logs"), "ha_get_logs");
        assert_eq!(en.term("服务"), "服务");
        assert_eq!(en.term("is"), "is");
        let fr = Stemmer::French.terms();
        assert_eq!(fr.term("recherches"), fr.term("recherche"));
        assert_eq!(Stemmer::None.terms().term("flights"), "flights");
        // The cached path gives the same terms, the second time from the cache.
        for _ in 0..2 {
            for w in ["flights", "searching", "inc12291856", "is", "服务"] {
                assert_eq!(en.with_term(w, str::to_owned), en.term(w));
                assert_eq!(fr.with_term(w, str::to_owned), fr.term(w));
            }
        }
    }

    #[test]
    fn names_and_codes_round_trip() {
        for s in Stemmer::ALL {
            assert_eq!(s.name().parse::<Stemmer>().unwrap(), s);
            assert_eq!(Stemmer::from_code(s.code()), Some(s));
        }
        assert!("porter".parse::<Stemmer>().is_err());
        assert_eq!(Stemmer::from_code(3), None);
    }
}
