//! The MongoDB adapter: one database, the caller's collection names, `_id` = the document id
//! and `_v` = its version, checked in the filter of every conditional write.

mod convert;
mod error;
mod writes;

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Client, Collection, Database, IndexModel};
use serde_json::Value;

use crate::model::now_ms;
use crate::validate::{check_collection, check_document, check_id};
use crate::{CollectionSpec, DocumentStore, Expiry, Filter, IndexSpec, Query, StoreError, Stored};
use convert::{EXPIRES, ID, and_live, filter_doc, from_document, sort_doc};

/// MongoDB's IndexOptionsConflict: an index of that name exists with other options.
const INDEX_OPTIONS_CONFLICT: i32 = 85;
/// MongoDB's Unauthorized: the user lacks the privilege for the command.
const UNAUTHORIZED: i32 = 13;

/// The MongoDB store. Cheap to clone (the driver's client is a shared pool).
#[derive(Clone, Debug)]
pub struct MongoStore {
    db: Database,
    /// The retention of each collection ensured by this process (writes stamp the time it
    /// counts from; reads leave expired documents out).
    expiries: std::sync::Arc<std::sync::RwLock<std::collections::HashMap<String, Expiry>>>,
}

impl MongoStore {
    /// The TTL index that deletes a collection's expired documents. A retention the operator
    /// changed (the index exists with another `expireAfterSeconds`) is applied in place with
    /// `collMod`; a user without that privilege (it is dbAdmin's, and readWrite is enough for
    /// everything else ramen does) rebuilds the index instead.
    async fn ensure_ttl_index(
        &self,
        coll: &Collection<Document>,
        expiry: &Expiry,
    ) -> Result<(), StoreError> {
        let name = format!("ttl_{}", expiry.field.replace('.', "_"));
        let index = || {
            let after = std::time::Duration::from_secs(expiry.after_seconds);
            let options = IndexOptions::builder().name(name.clone()).expire_after(after).build();
            IndexModel::builder().keys(doc! { EXPIRES: 1 }).options(options).build()
        };
        let code = |e: &mongodb::error::Error| error::server_error(e).map(|(c, _)| c);
        let conflict = |e| error::map_index(e, coll.name(), &name);
        match coll.create_index(index()).await {
            Ok(_) => return Ok(()),
            Err(e) if code(&e) == Some(INDEX_OPTIONS_CONFLICT) => {}
            Err(e) => return Err(conflict(e)),
        }
        let seconds = i64::try_from(expiry.after_seconds).unwrap_or(i64::MAX);
        let change = doc! {
            "collMod": coll.name(),
            "index": { "name": &name, "expireAfterSeconds": seconds },
        };
        match self.db.run_command(change).await {
            Ok(_) => Ok(()),
            Err(e) if code(&e) == Some(UNAUTHORIZED) => {
                coll.drop_index(&name).await.map_err(error::map)?;
                coll.create_index(index()).await.map(drop).map_err(conflict)
            }
            Err(e) => Err(conflict(e)),
        }
    }

    /// Connects lazily: the URI is parsed now, the server is first reached by the first call
    /// (use `ping` to check it).
    pub async fn connect(uri: &str, db: &str) -> Result<Self, StoreError> {
        // MongoDB's own rules for database names, checked here for a clear message.
        if db.is_empty() || db.len() > 63 || db.contains(['/', '\\', '.', ' ', '"', '$', '\0']) {
            return Err(StoreError::InvalidName {
                what: "database",
                reason: format!("`{db}` must be 1 to 63 bytes without / \\ . space \" $ or NUL"),
            });
        }
        let client = Client::with_uri_str(uri).await.map_err(error::map)?;
        Ok(Self { db: client.database(db), expiries: Default::default() })
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    fn expiry(&self, coll: &str) -> Option<Expiry> {
        let expiries = self.expiries.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        expiries.get(coll).cloned()
    }

    fn coll(&self, name: &str) -> Result<mongodb::Collection<Document>, StoreError> {
        check_collection(name)?;
        Ok(self.db.collection(name))
    }

    async fn create_index(
        &self,
        coll: &mongodb::Collection<Document>,
        index: &IndexSpec,
        unique: bool,
    ) -> Result<(), StoreError> {
        let (keys, present) = convert::index_keys(index);
        let mut options = IndexOptions::builder().name(index.name.clone()).build();
        if unique {
            options.unique = Some(true);
            options.partial_filter_expression = Some(present);
        }
        let model = IndexModel::builder().keys(keys).options(options).build();
        coll.create_index(model)
            .await
            .map(drop)
            .map_err(|e| error::map_index(e, coll.name(), &index.name))
    }
}

#[async_trait]
impl DocumentStore for MongoStore {
    async fn ensure_collection(&self, spec: &CollectionSpec) -> Result<(), StoreError> {
        spec.validate()?;
        match self.db.create_collection(&spec.name).await {
            Ok(()) => {}
            Err(e)
                if error::server_error(&e).is_some_and(|(c, _)| c == error::NAMESPACE_EXISTS) => {}
            Err(e) => return Err(error::map(e)),
        }
        let coll = self.coll(&spec.name)?;
        // One index per call, so a failure names the index that failed.
        for index in &spec.unique {
            self.create_index(&coll, index, true).await?;
        }
        for index in &spec.indexes {
            self.create_index(&coll, index, false).await?;
        }
        if let Some(expiry) = &spec.expiry {
            self.ensure_ttl_index(&coll, expiry).await?;
            let mut expiries =
                self.expiries.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            expiries.insert(spec.name.clone(), expiry.clone());
        }
        Ok(())
    }

    async fn insert(&self, coll: &str, id: &str, doc: &Value) -> Result<u64, StoreError> {
        check_document(doc)?;
        check_id(id)?;
        let expiry = self.expiry(coll);
        let coll = self.coll(coll)?;
        writes::clear_expired(&coll, id, expiry.as_ref(), now_ms()).await?;
        writes::insert(&coll, id, doc, expiry.as_ref()).await
    }

    async fn get(&self, coll: &str, id: &str) -> Result<Option<Stored>, StoreError> {
        check_id(id)?;
        let filter = and_live(doc! { ID: id }, self.expiry(coll).as_ref(), now_ms());
        let found = self.coll(coll)?.find_one(filter).await.map_err(error::map)?;
        found.map(from_document).transpose()
    }

    async fn update(
        &self,
        coll: &str,
        id: &str,
        expected: u64,
        doc: &Value,
    ) -> Result<u64, StoreError> {
        check_document(doc)?;
        check_id(id)?;
        let expiry = self.expiry(coll);
        let coll = self.coll(coll)?;
        writes::clear_expired(&coll, id, expiry.as_ref(), now_ms()).await?;
        writes::update(&coll, id, expected, doc, expiry.as_ref()).await
    }

    async fn put(&self, coll: &str, id: &str, doc: &Value) -> Result<u64, StoreError> {
        check_document(doc)?;
        check_id(id)?;
        let expiry = self.expiry(coll);
        let coll = self.coll(coll)?;
        writes::clear_expired(&coll, id, expiry.as_ref(), now_ms()).await?;
        writes::put(&coll, id, doc, expiry.as_ref()).await
    }

    async fn put_many(&self, coll: &str, docs: &[(String, Value)]) -> Result<(), StoreError> {
        for (id, doc) in docs {
            check_document(doc)?;
            check_id(id)?;
        }
        if docs.is_empty() {
            return Ok(());
        }
        let expiry = self.expiry(coll);
        let coll = self.coll(coll)?;
        writes::put_many(&coll, docs, expiry.as_ref(), now_ms()).await
    }

    async fn delete(
        &self,
        coll: &str,
        id: &str,
        expected: Option<u64>,
    ) -> Result<bool, StoreError> {
        check_id(id)?;
        let expiry = self.expiry(coll);
        let coll = self.coll(coll)?;
        writes::clear_expired(&coll, id, expiry.as_ref(), now_ms()).await?;
        writes::delete(&coll, id, expected).await
    }

    async fn find(&self, coll: &str, query: &Query) -> Result<Vec<Stored>, StoreError> {
        query.validate()?;
        let filter = and_live(filter_doc(&query.filter), self.expiry(coll).as_ref(), now_ms());
        let coll = self.coll(coll)?;
        // MongoDB reads limit 0 as "no limit".
        if query.limit == Some(0) {
            return Ok(Vec::new());
        }
        let mut find = coll.find(filter).sort(sort_doc(&query.sort));
        if query.skip > 0 {
            find = find.skip(query.skip);
        }
        if let Some(limit) = query.limit {
            find = find.limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let docs: Vec<Document> =
            find.await.map_err(error::map)?.try_collect().await.map_err(error::map)?;
        docs.into_iter().map(from_document).collect()
    }

    async fn count(&self, coll: &str, filter: &Filter) -> Result<u64, StoreError> {
        filter.validate()?;
        let filter = and_live(filter_doc(filter), self.expiry(coll).as_ref(), now_ms());
        let coll = self.coll(coll)?;
        coll.count_documents(filter).await.map_err(error::map)
    }

    async fn delete_many(&self, coll: &str, filter: &Filter) -> Result<u64, StoreError> {
        filter.validate()?;
        let filter = and_live(filter_doc(filter), self.expiry(coll).as_ref(), now_ms());
        let coll = self.coll(coll)?;
        let result = coll.delete_many(filter).await.map_err(error::map)?;
        Ok(result.deleted_count)
    }

    async fn collections(&self) -> Result<Vec<String>, StoreError> {
        let mut names = self.db.list_collection_names().await.map_err(error::map)?;
        names.retain(|n| !n.starts_with("system."));
        names.sort();
        Ok(names)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.db.run_command(doc! { "ping": 1 }).await.map(drop).map_err(error::map)
    }
}
