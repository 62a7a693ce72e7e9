//! Entities in a query: dictionary terms (products, services, repositories) found
//! by one Aho-Corasick automaton over the folded query, and patterns (incident IDs
//! and the like) found by regexes over the query as written.
//!
//! Dictionary terms match whole words, case-insensitively; with `fold_accents`
//! also accent-insensitively (the lexical index's folding,
//! [`crate::lexical::tokenize::fold`]). A term written in a script without spaces
//! (CJK) matches anywhere. Overlapping dictionary matches keep the leftmost,
//! then the longest. Offsets are in characters of the query as given.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;

use crate::error::{Error, Result};
use crate::lexical::tokenize::{fold_char, is_cjk};

/// One entity found in a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    /// The entity type (`product`, `incident_id`, ...).
    pub kind: String,
    /// The dictionary term as configured, or the text a pattern matched.
    pub value: String,
    /// First character of the match in the query (0-based, in `char`s).
    pub start: usize,
    /// One past the last character of the match.
    pub end: usize,
}

/// Dictionaries and patterns, compiled once; [`EntitySet::find`] is read-only and `Sync`.
pub struct EntitySet {
    automaton: Option<AhoCorasick>,
    /// Per automaton pattern: (kind, term as configured, matches anywhere).
    terms: Vec<(String, String, bool)>,
    patterns: Vec<(String, Regex)>,
    fold_accents: bool,
}

/// `text` folded for matching, and for each byte of the result the index of the
/// original character it came from (one more entry: the number of characters).
fn folded(text: &str, accents: bool) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len() + 1);
    let mut n = 0;
    for (i, c) in text.chars().enumerate() {
        let mut push = |x: char| {
            out.push(x);
            origin.extend(std::iter::repeat_n(i, x.len_utf8()));
        };
        if accents {
            fold_char(c, &mut |x, _, _| push(x));
        } else {
            c.to_lowercase().for_each(&mut push);
        }
        n = i + 1;
    }
    origin.push(n);
    (out, origin)
}

fn word_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() && !is_cjk(c))
}

impl EntitySet {
    /// Compile `dictionaries` (kind, terms) and `patterns` (kind, regex).
    ///
    /// Errors: an empty kind or term, or a regex that does not compile
    /// ([`Error::InvalidArgument`], naming it).
    pub fn new(
        dictionaries: &[(String, Vec<String>)],
        patterns: &[(String, String)],
        fold_accents: bool,
    ) -> Result<Self> {
        let mut keys = Vec::new();
        let mut terms = Vec::new();
        for (kind, list) in dictionaries {
            if kind.trim().is_empty() {
                return Err(Error::InvalidArgument(
                    "an entity dictionary needs a non-empty type".into(),
                ));
            }
            for term in list {
                let key = folded(term.trim(), fold_accents).0;
                if key.is_empty() {
                    return Err(Error::InvalidArgument(format!(
                        "entity dictionary {kind:?} holds an empty term"
                    )));
                }
                let anywhere = key.chars().next().is_some_and(is_cjk)
                    || key.chars().last().is_some_and(is_cjk);
                keys.push(key);
                terms.push((kind.clone(), term.trim().to_string(), anywhere));
            }
        }
        let automaton = if keys.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&keys)
                    .map_err(|e| Error::InvalidArgument(format!("entity dictionaries: {e}")))?,
            )
        };
        let mut compiled = Vec::with_capacity(patterns.len());
        for (kind, re) in patterns {
            if kind.trim().is_empty() {
                return Err(Error::InvalidArgument(
                    "an entity pattern needs a non-empty type".into(),
                ));
            }
            let r = Regex::new(re).map_err(|e| {
                Error::InvalidArgument(format!("entity pattern {kind:?} ({re:?}): {e}"))
            })?;
            compiled.push((kind.clone(), r));
        }
        Ok(Self {
            automaton,
            terms,
            patterns: compiled,
            fold_accents,
        })
    }

    /// Number of dictionary terms and of patterns.
    pub fn len(&self) -> (usize, usize) {
        (self.terms.len(), self.patterns.len())
    }

    /// True when there is nothing to find.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.patterns.is_empty()
    }

    /// The entities of `text`: dictionary terms, then pattern matches, each in order of position.
    pub fn find(&self, text: &str) -> Vec<Entity> {
        let mut out = Vec::new();
        if let Some(ac) = &self.automaton {
            let (f, origin) = folded(text, self.fold_accents);
            for m in ac.find_iter(&f) {
                let (kind, term, anywhere) = &self.terms[m.pattern().as_usize()];
                let whole = *anywhere
                    || (!word_char(f[..m.start()].chars().next_back())
                        && !word_char(f[m.end()..].chars().next()));
                if whole {
                    out.push(Entity {
                        kind: kind.clone(),
                        value: term.clone(),
                        start: origin[m.start()],
                        end: origin[m.end() - 1] + 1,
                    });
                }
            }
        }
        if !self.patterns.is_empty() {
            let chars_before = |b: usize| text[..b].chars().count();
            for (kind, re) in &self.patterns {
                for m in re.find_iter(text).filter(|m| !m.is_empty()) {
                    let start = chars_before(m.start());
                    out.push(Entity {
                        kind: kind.clone(),
                        value: m.as_str().to_string(),
                        start,
                        end: start + m.as_str().chars().count(),
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(fold: bool) -> EntitySet {
        let dict = vec![
            (
                "product".to_string(),
                vec![
                    "Kafka".to_string(),
                    "GMON".to_string(),
                    "Élan Vital".to_string(),
                ],
            ),
            (
                "service".to_string(),
                vec!["billing platform".to_string(), "支付系统".to_string()],
            ),
        ];
        let pats = vec![("incident_id".to_string(), r"INC\d{8}".to_string())];
        EntitySet::new(&dict, &pats, fold).unwrap()
    }

    #[test]
    fn finds_terms_and_patterns_with_char_offsets() {
        let s = set(true);
        let q = "Le cluster kafka du billing platform : état de l'incident INC20481234 ?";
        let got = s.find(q);
        let kinds: Vec<_> = got
            .iter()
            .map(|e| (e.kind.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("product", "Kafka"),
                ("service", "billing platform"),
                ("incident_id", "INC20481234")
            ]
        );
        for e in &got {
            let text: String = q.chars().skip(e.start).take(e.end - e.start).collect();
            assert_eq!(text.to_lowercase(), e.value.to_lowercase());
        }
    }

    #[test]
    fn whole_words_accents_and_cjk() {
        let s = set(true);
        assert!(s.find("gmonitor is down").is_empty()); // not inside a longer word
        assert_eq!(s.find("GMON-2 is down")[0].value, "GMON");
        assert_eq!(s.find("l'elan vital tourne")[0].value, "Élan Vital");
        assert!(set(false).find("l'elan vital tourne").is_empty()); // accents count unless folded
        assert_eq!(
            set(false).find("L'ÉLAN VITAL tourne")[0].value,
            "Élan Vital"
        ); // case never counts
        let zh = s.find("支付系统又挂了");
        assert_eq!((zh[0].start, zh[0].end), (0, 4));
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let bad = EntitySet::new(&[], &[("x".to_string(), "(".to_string())], true);
        assert!(matches!(bad, Err(Error::InvalidArgument(m)) if m.contains("\"x\"")));
        assert!(EntitySet::new(&[("p".into(), vec![" ".into()])], &[], true).is_err());
        assert!(EntitySet::new(&[], &[], true)
            .unwrap()
            .find("anything")
            .is_empty());
    }
}
