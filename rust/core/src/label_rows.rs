//! Per-label facts of an index, rebuilt after each write: the domain of each
//! label and its rows, grouped (compressed-row layout).

/// Domain and rows of every label code.
#[derive(Clone, Debug)]
pub struct LabelRows {
    domains: Vec<u32>,
    /// `rows[start[c]..start[c + 1]]` are the rows of label `c`.
    start: Vec<u32>,
    rows: Vec<u32>,
    one_row: bool,
}

impl Default for LabelRows {
    fn default() -> Self {
        LabelRows {
            domains: Vec::new(),
            start: vec![0],
            rows: Vec::new(),
            one_row: true,
        }
    }
}

impl LabelRows {
    /// Build from the label and domain code of each row (O(rows)).
    pub fn build(n_labels: usize, labels: &[u32], domains: &[u32]) -> Self {
        let mut dom = vec![0u32; n_labels];
        let mut start = vec![0u32; n_labels + 1];
        for (&l, &d) in labels.iter().zip(domains) {
            dom[l as usize] = d;
            start[l as usize + 1] += 1;
        }
        for c in 0..n_labels {
            start[c + 1] += start[c];
        }
        let mut next = start.clone();
        let mut rows = vec![0u32; labels.len()];
        for (r, &l) in labels.iter().enumerate() {
            rows[next[l as usize] as usize] = r as u32;
            next[l as usize] += 1;
        }
        LabelRows {
            domains: dom,
            one_row: start.windows(2).all(|w| w[1] - w[0] <= 1),
            start,
            rows,
        }
    }

    /// Domain code of each label (that of its last row; 0 without rows).
    pub fn domains(&self) -> &[u32] {
        &self.domains
    }

    /// Rows of label `code`, ascending (empty for an unknown code).
    pub fn rows(&self, code: usize) -> &[u32] {
        match (self.start.get(code), self.start.get(code + 1)) {
            (Some(&a), Some(&b)) => &self.rows[a as usize..b as usize],
            _ => &[],
        }
    }

    /// True when no label has more than one row (a tool catalog, say).
    pub fn one_row_per_label(&self) -> bool {
        self.one_row
    }
}
