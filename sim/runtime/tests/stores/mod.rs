//! Test cases shared by the stores (also included by the PostgreSQL store's tests).

pub mod fold_cases;
