//! String interning for labels and domains.

use std::collections::HashMap;

/// Interned strings: code `0` is always the empty string ("none").
#[derive(Clone, Debug)]
pub struct Interner {
    names: Vec<String>,
    codes: HashMap<String, u32>,
}

impl Default for Interner {
    fn default() -> Self {
        let mut i = Interner {
            names: Vec::new(),
            codes: HashMap::new(),
        };
        i.intern("");
        i
    }
}

impl Interner {
    /// Code of `name`, adding it when new.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&c) = self.codes.get(name) {
            return c;
        }
        let c = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.codes.insert(name.to_owned(), c);
        c
    }

    /// Code of `name` if known.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.codes.get(name).copied()
    }

    /// All names by code.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}
