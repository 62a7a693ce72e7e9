//! Per-label facts of an index, rebuilt after each write: the domain of each
//! label and its rows, grouped (compressed-row layout).

/// Domain and rows of every label code.
#[derive(Clone, Debug)]
pub struct LabelRows {
    domains: Vec<u32>,
    /// `rows[start[c]..start[c + 1]]` are the rows of label `c`.
    start: Vec<u32>,
    rows: Vec<u32>,
    /// Row order split into runs of equal labels: run `i` is rows
    /// `runs[i]..runs[i + 1]` (ends with the row count).
    runs: Vec<u32>,
    one_row: bool,
}

impl Default for LabelRows {
    fn default() -> Self {
        LabelRows {
            domains: Vec::new(),
            start: vec![0],
            rows: Vec::new(),
            runs: vec![0],
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
        let mut runs: Vec<u32> = (0..labels.len())
            .filter(|&r| r == 0 || labels[r] != labels[r - 1])
            .map(|r| r as u32)
            .collect();
        runs.push(labels.len() as u32);
        LabelRows {
            domains: dom,
            runs,
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

    /// Starts of the runs of equal labels in row order, then the row count.
    pub fn runs(&self) -> &[u32] {
        &self.runs
    }

    /// True when no label has more than one row (a tool catalog, say).
    pub fn one_row_per_label(&self) -> bool {
        self.one_row
    }
}
