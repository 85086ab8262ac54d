//! The schema's migrations: replicas starting together on a fresh schema
//! do not race, and a schema written by a newer Looopy is refused.

use crate::support;

use looopy_core::StoreError;
use looopy_stores_postgres::{PostgresBackend, PostgresConfig, PostgresError, SCHEMA_VERSION};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_starting_together_migrate_once() {
    let Some(pg) = support::postgres("replicas_starting_together_migrate_once") else {
        return;
    };
    let config = support::config(pg.url()).with_pool_size(2);
    let starts: Vec<_> = (0..6)
        .map(|_| tokio::spawn(PostgresBackend::connect(config.clone())))
        .collect();
    let mut backends = Vec::new();
    for start in starts {
        match start.await.expect("the start did not panic") {
            Ok(backend) => backends.push(backend),
            Err(e) => panic!("a replica starting beside others failed: {e}"),
        }
    }
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM looopy_migrations ORDER BY version")
            .fetch_all(backends[0].pool())
            .await
            .expect("the migrations are recorded");
    assert_eq!(applied, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    // Every replica works on the one schema.
    let stores: Vec<_> = backends
        .iter()
        .map(|b| looopy_stores_postgres::stores(b.clone()))
        .collect();
    stores[0]
        .messages
        .append("ctx", &[looopy_core::Message::user("hi")])
        .await
        .expect("append");
    for s in &stores {
        assert_eq!(s.messages.count("ctx").await.expect("count"), 1);
    }
    support::drop_schema(&backends[0]).await;
}

#[tokio::test]
async fn a_schema_written_by_a_newer_looopy_is_refused() {
    let Some(pg) = support::postgres("a_schema_written_by_a_newer_looopy_is_refused") else {
        return;
    };
    let config = support::config(pg.url());
    let backend = support::backend(config.clone()).await;
    sqlx::query("INSERT INTO looopy_migrations (version, name) VALUES ($1, 'from the future')")
        .bind(SCHEMA_VERSION + 1)
        .execute(backend.pool())
        .await
        .expect("insert");
    match PostgresBackend::connect(config.clone()).await {
        Err(PostgresError::SchemaTooNew {
            found, supported, ..
        }) => assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION)),
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    match looopy_stores_postgres::connect(config).await {
        Err(StoreError::Backend { message }) => {
            assert!(message.contains("newer"), "{message}");
            assert!(message.contains(&config_schema(&backend)), "{message}");
        }
        other => panic!("expected a backend error, got {:?}", other.map(|_| ())),
    }
    support::drop_schema(&backend).await;
}

fn config_schema(backend: &PostgresBackend) -> String {
    backend.config().schema.clone()
}

#[tokio::test]
async fn a_bad_configuration_is_refused_before_connecting() {
    for schema in ["", "Upper", "1abc", "a-b", "pg_x", &"x".repeat(41)] {
        let config = PostgresConfig::new("postgres://nobody@127.0.0.1:1/none").with_schema(schema);
        assert!(
            matches!(
                PostgresBackend::connect(config).await,
                Err(PostgresError::Schema { .. })
            ),
            "schema `{schema}` must be refused"
        );
    }
    let config = PostgresConfig::new("postgres://nobody@127.0.0.1:1/none").with_pool_size(0);
    assert!(matches!(
        PostgresBackend::connect(config).await,
        Err(PostgresError::PoolSize)
    ));
    let config = PostgresConfig::new("mysql://x");
    let error = PostgresBackend::connect(config)
        .await
        .expect_err("a MySQL URL");
    assert!(
        matches!(error, PostgresError::NotPostgres { .. }),
        "{error:?}"
    );
    let config = PostgresConfig::new("postgres://x:y@[bad/db");
    let error = PostgresBackend::connect(config)
        .await
        .expect_err("a broken URL");
    assert!(matches!(error, PostgresError::Url { .. }), "{error:?}");
    assert!(
        !error.to_string().contains(":y@"),
        "the password stays out: {error}"
    );
}
