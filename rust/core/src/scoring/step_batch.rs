//! Batches of routing steps ([`score_routes_batch`]): the same results as one
//! [`score_routes_biased`] call a query, with the exemplar table read once for many queries.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::index::scan::route_parallel_cutoff;
use crate::index::storage::StorageKind;
use crate::index::FlatIndex;
use crate::scoring::step::{
    exact_parts, finish, score_routes_biased, setup, StepParams, StepResult,
};
use crate::scoring::step_compact;
use crate::scoring::step_scan::scan_int8_many;

/// [`score_routes_biased`] of each query stored row-major in `queries`, query `i` with
/// `params[i]` and `biases[i]`: the same results as one call each. With f32 or f16
/// storage the exemplar table is read once per tile for the whole batch
/// ([`FlatIndex::score_all_batch`]) instead of once per query; int8 storage scans its codes
/// once per block of [`INT8_BLOCK`] queries, the blocks split across threads above the routing
/// cutoff ([`route_parallel_cutoff`], over the whole batch).
pub fn score_routes_batch(
    index: &FlatIndex,
    queries: &[f32],
    params: &[&StepParams],
    biases: &[Option<&[f32]>],
) -> Result<Vec<StepResult>> {
    let (d, n) = (index.dim(), params.len());
    if biases.len() != n || queries.len() != n * d {
        return Err(Error::InvalidArgument(format!(
            "score_routes_batch: {} floats for {n} queries of width {d}, {} biases",
            queries.len(),
            biases.len()
        )));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    if index.kind() == StorageKind::Int8 {
        // Blocks of queries share each pass over the codes; the blocks split across the rayon
        // pool when the batch's scans add up to the routing cutoff (one fork for the batch).
        let block = |(qs, (ps, bs)): Block| int8_block(index, qs, ps, bs);
        let threads = rayon::current_num_threads();
        let parallel = threads > 1 && n * index.len() * d >= route_parallel_cutoff();
        if parallel && n.div_ceil(INT8_BLOCK) < threads {
            // Too few blocks to fill the pool: the queries split across it, one scan each (as before).
            return queries
                .par_chunks_exact(d)
                .zip(params.par_iter().zip(biases.par_iter()))
                .map(|(q, (p, b))| score_routes_biased(index, q, p, *b))
                .collect();
        }
        let blocks = queries
            .chunks(INT8_BLOCK * d)
            .zip(params.chunks(INT8_BLOCK).zip(biases.chunks(INT8_BLOCK)));
        let parts: Vec<Result<Vec<StepResult>>> = if parallel {
            blocks
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(block)
                .collect()
        } else {
            blocks.map(block).collect()
        };
        let mut out = Vec::with_capacity(n);
        for part in parts {
            out.extend(part?);
        }
        return Ok(out);
    }
    // Blocks of queries bound the scores held at once (BATCH_BLOCK × rows) for any batch size.
    let mut out = Vec::with_capacity(n);
    for ((qs, ps), bs) in queries
        .chunks(BATCH_BLOCK * d)
        .zip(params.chunks(BATCH_BLOCK))
        .zip(biases.chunks(BATCH_BLOCK))
    {
        let scores = index.score_all_batch(qs)?;
        for ((sc, p), b) in scores.chunks_exact(index.len()).zip(ps).zip(bs) {
            let (route_domains, mult) = setup(index, p, *b)?;
            out.push(finish(
                exact_parts(index, sc, p, *b)?,
                route_domains,
                &mult,
                p,
                *b,
            )?);
        }
    }
    Ok(out)
}

/// One block of [`score_routes_batch`]: its queries (row-major), their parameters and biases.
type Block<'a> = (&'a [f32], (&'a [&'a StepParams], &'a [Option<&'a [f32]>]));

/// Queries of one int8 block of [`score_routes_batch`]: the kernel reads each tile of codes once
/// for all of them (15,000 × 256 codes: 128 µs a query alone, 56 in blocks of 16; Xeon EMR).
const INT8_BLOCK: usize = 16;

/// [`score_routes_biased`] of a block of queries over int8 storage, one scan of the codes for all.
fn int8_block(
    index: &FlatIndex,
    queries: &[f32],
    params: &[&StepParams],
    biases: &[Option<&[f32]>],
) -> Result<Vec<StepResult>> {
    let setups = params
        .iter()
        .zip(biases)
        .map(|(p, b)| setup(index, p, *b))
        .collect::<Result<Vec<_>>>()?;
    let (_, prepared) = index.prepare_queries(queries)?;
    let qs: Vec<&[f32]> = prepared.chunks_exact(index.dim()).collect();
    let tops: Vec<usize> = params
        .iter()
        .map(|p| step_compact::scan_top(index, p))
        .collect();
    let n_routes = setups.first().map_or(0, |(_, mult)| mult.len());
    let scans = scan_int8_many(index, &qs, n_routes, &tops, biases);
    let mut out = Vec::with_capacity(qs.len());
    for ((((q, p), b), (route_domains, mult)), scan) in
        qs.iter().zip(params).zip(biases).zip(setups).zip(scans)
    {
        let e = step_compact::estimate_scanned(index, q, p, &mult, *b, scan)?;
        out.push(finish(
            (e.raw, e.bound, e.top, e.top_dense),
            route_domains,
            &mult,
            p,
            *b,
        )?);
    }
    Ok(out)
}

/// Queries scored together by [`score_routes_batch`]: each tile of the table is read once for
/// this many, and at most this many rows of scores are held (64 × 15,000 rows: 3.8 MB).
const BATCH_BLOCK: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::scan::{set_route_parallel_cutoff, ROUTE_PARALLEL_CUTOFF};
    use crate::scoring::Aggregation;

    #[test]
    fn a_batch_is_each_query_alone() {
        let (d, n) = (24, 600);
        let mut rnd = crate::testing::uniform(7);
        let rows: Vec<f32> = (0..n * d).map(|_| rnd()).collect();
        let labels: Vec<String> = (0..n).map(|i| format!("r{}", i % 37)).collect();
        let domains: Vec<String> = (0..n).map(|i| format!("d{}", i % 3)).collect();
        let (l, dm): (Vec<&str>, Vec<&str>) = (
            labels.iter().map(String::as_str).collect(),
            domains.iter().map(String::as_str).collect(),
        );
        let ids: Vec<u64> = (0..n as u64).collect();
        // Five queries, and more than two blocks of BATCH_BLOCK.
        let nq = 2 * BATCH_BLOCK + 3;
        let queries: Vec<f32> = (0..nq * d).map(|_| rnd()).collect();
        // int8 batches split their queries across threads above the routing cutoff: both ways.
        for (kind, nq, cutoff) in [
            (StorageKind::F32, 5, ROUTE_PARALLEL_CUTOFF),
            (StorageKind::F16, 5, ROUTE_PARALLEL_CUTOFF),
            (StorageKind::Int8, 5, ROUTE_PARALLEL_CUTOFF),
            (StorageKind::Int8, nq, 1),
            (StorageKind::F32, nq, ROUTE_PARALLEL_CUTOFF),
        ] {
            set_route_parallel_cutoff(cutoff);
            let queries = &queries[..nq * d];
            let mut idx = FlatIndex::new(d, kind, true).unwrap();
            idx.add(&ids, &rows, Some(&l), Some(&dm)).unwrap();
            let codes = idx.label_names().len();
            let bias: Vec<f32> = (0..codes).map(|c| (c % 5) as f32 * 0.01).collect();
            let plain = StepParams::new(Aggregation::Max, 0.05);
            let domain = StepParams {
                active_domains: vec!["d1".into()],
                top_exemplars: 3,
                ..StepParams::new(Aggregation::Mean, 0.1)
            };
            let params: Vec<&StepParams> = (0..nq)
                .map(|i| if i % 2 == 0 { &plain } else { &domain })
                .collect();
            let biases: Vec<Option<&[f32]>> =
                (0..nq).map(|i| (i % 3 == 1).then_some(&bias[..])).collect();
            let got = score_routes_batch(&idx, queries, &params, &biases).unwrap();
            for (i, q) in queries.chunks(d).enumerate() {
                let one = score_routes_biased(&idx, q, params[i], biases[i]).unwrap();
                assert_eq!(
                    format!("{:?}", got[i]),
                    format!("{one:?}"),
                    "{kind:?} query {i}"
                );
            }
        }
        set_route_parallel_cutoff(ROUTE_PARALLEL_CUTOFF);
        let idx = FlatIndex::new(d, StorageKind::F32, true).unwrap();
        assert!(score_routes_batch(
            &idx,
            &queries[..d],
            &[&StepParams::new(Aggregation::Max, 0.1)],
            &[None]
        )
        .is_err());
    }
}
