//! The `#[serde(...)]` attributes this derive reads, and serde's renaming
//! rules. An attribute it does not read is an error naming it, so a type
//! whose attributes say more than this derive understands stays on serde's.

use proc_macro2::Span;
use quote::format_ident;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Error, Expr, ExprLit, Lit, LitStr, Path, Type};

/// How a missing field gets its value.
pub enum Missing {
    /// `missing field` error (or `None` for an `Option`).
    Required,
    /// `Default::default()` of the field's type.
    Default,
    /// A function named by `default = "path"`.
    Call(Path),
}

pub struct Field {
    pub ident: syn::Ident,
    pub ty: Type,
    /// The name read; `aliases` are read too.
    pub name: String,
    pub aliases: Vec<String>,
    pub missing: Missing,
    pub skip: bool,
    pub with: Option<Path>,
}

/// What the attributes on the struct or enum itself say.
pub struct Container {
    /// The name given to `deserialize_struct`/`deserialize_enum`.
    pub name: String,
    pub rename_all: Option<String>,
    pub default: bool,
    pub deny_unknown_fields: bool,
    /// `remote = "Type"`: this is a twin that reads `Type`.
    pub remote: Option<Path>,
}

/// An enum's variant.
pub struct Variant {
    pub ident: syn::Ident,
    pub name: String,
    pub aliases: Vec<String>,
    /// Renames the fields of a struct variant.
    pub rename_all: Option<String>,
}

fn key(meta: &ParseNestedMeta) -> String {
    meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default()
}

fn unread(meta: &ParseNestedMeta, key: &str, on: &str) -> Error {
    meta.error(format!("hearth_json::Deserialize does not read `#[serde({key} ...)]` on {on}: use serde's derive"))
}

fn string(meta: &ParseNestedMeta) -> syn::Result<String> {
    Ok(meta.value()?.parse::<LitStr>()?.value())
}

fn serde_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("serde"))
}

/// The attributes on the type itself.
pub fn container(ident: &syn::Ident, attrs: &[Attribute]) -> syn::Result<Container> {
    let mut c = Container {
        name: ident.to_string(),
        rename_all: None,
        default: false,
        deny_unknown_fields: false,
        remote: None,
    };
    for attr in serde_attrs(attrs) {
        attr.parse_nested_meta(|meta| {
            match key(&meta).as_str() {
                "rename_all" => c.rename_all = Some(string(&meta)?),
                "rename" => c.name = string(&meta)?,
                "default" if !meta.input.peek(syn::Token![=]) => c.default = true,
                "deny_unknown_fields" => c.deny_unknown_fields = true,
                "remote" => c.remote = Some(meta.value()?.parse::<LitStr>()?.parse()?),
                other => return Err(unread(&meta, other, "a type")),
            }
            Ok(())
        })?;
    }
    Ok(c)
}

/// The attributes on an enum's variant.
pub fn variant(v: &syn::Variant, rule: Option<&str>) -> syn::Result<Variant> {
    let mut out = Variant {
        ident: v.ident.clone(),
        name: rename_variant(&v.ident.to_string(), rule).map_err(|e| Error::new(Span::call_site(), e))?,
        aliases: Vec::new(),
        rename_all: None,
    };
    for attr in serde_attrs(&v.attrs) {
        attr.parse_nested_meta(|meta| {
            match key(&meta).as_str() {
                "rename" => out.name = string(&meta)?,
                "alias" => out.aliases.push(string(&meta)?),
                "rename_all" => out.rename_all = Some(string(&meta)?),
                other => return Err(unread(&meta, other, "a variant")),
            }
            Ok(())
        })?;
    }
    Ok(out)
}

fn lit_str(expr: &Expr) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Ok(s.clone()),
        other => Err(Error::new_spanned(other, "expected a string")),
    }
}

/// The attributes on a named field; `rule` is the `rename_all` that applies.
pub fn field(f: &syn::Field, rule: Option<&str>) -> syn::Result<Field> {
    let ident = f.ident.clone().ok_or_else(|| Error::new_spanned(f, "a named field"))?;
    let plain = ident.to_string();
    let plain = plain.strip_prefix("r#").unwrap_or(&plain).to_owned();
    let mut out = Field {
        name: rename_field(&plain, rule).map_err(|e| Error::new(Span::call_site(), e))?,
        ident,
        ty: f.ty.clone(),
        aliases: Vec::new(),
        missing: Missing::Required,
        skip: false,
        with: None,
    };
    for attr in serde_attrs(&f.attrs) {
        attr.parse_nested_meta(|meta| {
            match key(&meta).as_str() {
                "rename" if meta.input.peek(syn::Token![=]) => out.name = string(&meta)?,
                "rename" => meta.parse_nested_meta(|inner| {
                    let value = string(&inner)?;
                    if inner.path.is_ident("deserialize") {
                        out.name = value;
                    }
                    Ok(())
                })?,
                "alias" => out.aliases.push(string(&meta)?),
                "default" if meta.input.peek(syn::Token![=]) => {
                    out.missing = Missing::Call(lit_str(&meta.value()?.parse::<Expr>()?)?.parse()?)
                }
                "default" => out.missing = Missing::Default,
                "skip" | "skip_deserializing" => out.skip = true,
                "deserialize_with" => out.with = Some(meta.value()?.parse::<LitStr>()?.parse()?),
                "with" => {
                    let mut module: Path = meta.value()?.parse::<LitStr>()?.parse()?;
                    module.segments.push(format_ident!("deserialize").into());
                    out.with = Some(module);
                }
                // Serialize-only: nothing to read.
                "skip_serializing" | "skip_serializing_if" | "serialize_with" => {
                    if meta.input.peek(syn::Token![=]) {
                        meta.value()?.parse::<Expr>()?;
                    }
                }
                other => return Err(unread(&meta, other, "a field")),
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// A field's name under a `rename_all`, as serde spells it
/// (`serde_derive`'s `RenameRule::apply_to_field`: ASCII case only).
pub fn rename_field(field: &str, rule: Option<&str>) -> Result<String, String> {
    let pascal = || {
        let mut out = String::new();
        let mut upper = true;
        for ch in field.chars() {
            if ch == '_' {
                upper = true;
            } else if upper {
                out.push(ch.to_ascii_uppercase());
                upper = false;
            } else {
                out.push(ch);
            }
        }
        out
    };
    Ok(match rule {
        None | Some("lowercase") | Some("snake_case") => field.to_owned(),
        Some("UPPERCASE") | Some("SCREAMING_SNAKE_CASE") => field.to_ascii_uppercase(),
        Some("PascalCase") => pascal(),
        Some("camelCase") => {
            let mut p = pascal();
            if let Some(first) = p.get_mut(..1) {
                first.make_ascii_lowercase();
            }
            p
        }
        Some("kebab-case") => field.replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => field.to_ascii_uppercase().replace('_', "-"),
        Some(other) => return Err(format!("unknown rename_all rule {other:?}")),
    })
}

/// A variant's name under a `rename_all` (`RenameRule::apply_to_variant`:
/// the Rust name is PascalCase).
pub fn rename_variant(variant: &str, rule: Option<&str>) -> Result<String, String> {
    let snake = || {
        let mut out = String::new();
        for (i, ch) in variant.char_indices() {
            if i > 0 && ch.is_uppercase() {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        }
        out
    };
    Ok(match rule {
        None | Some("PascalCase") => variant.to_owned(),
        Some("lowercase") => variant.to_ascii_lowercase(),
        Some("UPPERCASE") => variant.to_ascii_uppercase(),
        Some("camelCase") => {
            let mut out = variant.to_owned();
            if let Some(first) = out.get_mut(..1) {
                first.make_ascii_lowercase();
            }
            out
        }
        Some("snake_case") => snake(),
        Some("SCREAMING_SNAKE_CASE") => snake().to_ascii_uppercase(),
        Some("kebab-case") => snake().replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => snake().to_ascii_uppercase().replace('_', "-"),
        Some(other) => return Err(format!("unknown rename_all rule {other:?}")),
    })
}

/// Whether a type is spelled `Option<_>` (what serde's missing field turns into `None`).
pub fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| s.ident == "Option"),
        Type::Group(g) => is_option(&g.elem),
        Type::Paren(p) => is_option(&p.elem),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_spelled_as_serde_spells_them() {
        assert_eq!(rename_field("chat_id", Some("camelCase")).as_deref(), Ok("chatId"));
        assert_eq!(rename_field("chat_id", Some("PascalCase")).as_deref(), Ok("ChatId"));
        assert_eq!(rename_field("chat_id", Some("SCREAMING-KEBAB-CASE")).as_deref(), Ok("CHAT-ID"));
        assert_eq!(rename_field("chat_id", None).as_deref(), Ok("chat_id"));
        assert_eq!(rename_variant("ToolResult", Some("camelCase")).as_deref(), Ok("toolResult"));
        assert_eq!(rename_variant("ToolResult", Some("snake_case")).as_deref(), Ok("tool_result"));
        assert_eq!(rename_variant("ToolResult", Some("kebab-case")).as_deref(), Ok("tool-result"));
        assert_eq!(rename_variant("ToolResult", Some("lowercase")).as_deref(), Ok("toolresult"));
        assert_eq!(rename_variant("ToolResult", Some("SCREAMING_SNAKE_CASE")).as_deref(), Ok("TOOL_RESULT"));
        assert!(rename_field("x", Some("Title Case")).is_err());
    }
}
