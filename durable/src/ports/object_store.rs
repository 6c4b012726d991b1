//! The R2 bucket: objects read, written, listed, and the archives' gzip.

/// A storage failure (R2 or SQLite). The message is for logs, not users.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("storage: {0}")]
pub struct StorageError(pub String);

/// Listing entry / head result of an R2 object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectInfo {
    pub key: String,
    pub size: u64,
    pub etag: String,
    pub uploaded_ms: i64,
}

/// An object read whole from R2.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoredObject {
    pub info: ObjectInfo,
    pub body: Vec<u8>,
    pub content_type: Option<String>,
    pub custom_metadata: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PutOptions {
    pub content_type: Option<String>,
    pub custom_metadata: Vec<(String, String)>,
}

/// One page of a listing. `prefixes` are the "folders" when a delimiter is used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListPage {
    pub objects: Vec<ObjectInfo>,
    pub prefixes: Vec<String>,
    pub cursor: Option<String>,
}

/// The R2 bucket.
#[allow(async_fn_in_trait)]
pub trait ObjectStore {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError>;
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError>;
    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError>;
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError>;
    async fn list(&self, prefix: &str, delimiter: Option<&str>, cursor: Option<&str>)
        -> Result<ListPage, StorageError>;

    /// One page of the objects under `prefix`, each with its custom metadata
    /// (R2 sends it only when asked, so [`ObjectStore::list`] does without).
    async fn list_with_metadata(&self, prefix: &str, cursor: Option<&str>) -> Result<MetadataPage, StorageError> {
        let _ = (prefix, cursor);
        Err(StorageError("this store cannot list metadata".into()))
    }

    /// Gzip-compresses `data` the way the bucket's archives are stored
    /// (`*.jsonl.gz`). The Worker uses the runtime's `CompressionStream`, so
    /// the upload carries no deflate code; test stores use a crate.
    async fn gzip(&self, data: &[u8]) -> Result<Vec<u8>, StorageError> {
        let _ = data;
        Err(StorageError("this store cannot gzip".into()))
    }

    /// Gunzips `data`, refusing more than `max_bytes` uncompressed (a hostile
    /// or corrupt archive must not fill the isolate's memory).
    async fn gunzip(&self, data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GunzipError> {
        let _ = (data, max_bytes);
        Err(GunzipError::Invalid("this store cannot gunzip".into()))
    }
}

/// A page of [`ObjectStore::list_with_metadata`]: each object with its
/// custom metadata, and the cursor of the next page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataPage {
    pub objects: Vec<(ObjectInfo, Vec<(String, String)>)>,
    pub cursor: Option<String>,
}

/// Why gzip data could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GunzipError {
    #[error("not valid gzip: {0}")]
    Invalid(String),
    #[error("larger than {0} bytes uncompressed")]
    TooLarge(usize),
}

/// A shared bucket is a bucket.
impl<O: ObjectStore> ObjectStore for std::rc::Rc<O> {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError> {
        (**self).get(key).await
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError> {
        (**self).head(key).await
    }
    async fn put(&self, key: &str, body: Vec<u8>, opts: PutOptions) -> Result<(), StorageError> {
        (**self).put(key, body, opts).await
    }
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError> {
        (**self).delete(keys).await
    }
    async fn list(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<ListPage, StorageError> {
        (**self).list(prefix, delimiter, cursor).await
    }
    async fn list_with_metadata(&self, prefix: &str, cursor: Option<&str>) -> Result<MetadataPage, StorageError> {
        (**self).list_with_metadata(prefix, cursor).await
    }
    async fn gzip(&self, data: &[u8]) -> Result<Vec<u8>, StorageError> {
        (**self).gzip(data).await
    }
    async fn gunzip(&self, data: &[u8], max_bytes: usize) -> Result<Vec<u8>, GunzipError> {
        (**self).gunzip(data, max_bytes).await
    }
}
