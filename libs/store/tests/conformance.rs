//! The document-store conformance suite, run against every adapter: the embedded store
//! always, MongoDB when `RAMEN_TEST_MONGO_URI` is set (each case then reports it was skipped).

mod suite;

/// One test per case and adapter, so a failure names both.
macro_rules! conformance {
    ($($module:ident :: $case:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() -> anyhow::Result<()> {
                    crate::suite::embedded(crate::suite::$module::$case).await
                }
            )*

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn survives_reopen() -> anyhow::Result<()> {
                crate::suite::durability::survives_reopen().await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn second_open_is_refused_clearly() -> anyhow::Result<()> {
                crate::suite::durability::second_open_is_refused_clearly().await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn expired_documents_are_purged() -> anyhow::Result<()> {
                crate::suite::expiry::the_embedded_store_purges_expired_documents().await
            }
        }

        mod mongo {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() -> anyhow::Result<()> {
                    crate::suite::mongo(stringify!($case), crate::suite::$module::$case).await
                }
            )*
        }
    };
}

conformance! {
    crud::insert_get_round_trip,
    crud::insert_duplicate_id_already_exists,
    crud::update_bumps_version,
    crud::stale_version_conflicts_and_changes_nothing,
    crud::missing_ids,
    crud::delete_with_expected_version,
    crud::put_upserts_and_bumps,
    crud::invalid_inputs_are_refused_clearly,
    unique::unique_violation_on_insert,
    unique::unique_violation_on_update,
    unique::compound_unique_index,
    unique::ensure_collection_is_idempotent_and_checks_data,
    query::find_with_each_operator,
    query::find_on_nested_paths,
    query::sort_skip_limit,
    query::count_and_delete_many,
    concurrency::concurrent_modify_counts_exactly,
    concurrency::typed_collection,
    concurrency::collections_are_listed,
    expiry::expired_documents_are_gone_for_reads_and_writes,
    expiry::a_retention_is_checked,
    expiry::a_retention_can_be_changed,
    expiry::put_many_writes_a_batch_idempotently,
}
