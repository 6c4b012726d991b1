//! `#[derive(hearth_json::Deserialize)]`: serde's struct reader, less the
//! code serde's derive writes again for every struct.
//!
//! Why: serde's derive gives each struct its own field-name type (an enum,
//! its visitor, its `deserialize_identifier` and `next_key_seed` instances):
//! ~300 bytes of WASM per struct read, ~150 structs. Here every struct names
//! its keys in one `&'static [&str]` table and reads them with one shared
//! seed ([`hearth_json::__private::Key`]); only the loop that stores each
//! field is the struct's own.
//!
//! What it reads is what serde's derive reads (the tests in
//! `durable/json/src/derive_tests.rs` compare the two): the same names
//! (`rename_all`, `rename`, `alias`), the same defaults (`default`,
//! `default = "path"`, a container `default`), `skip`/`skip_deserializing`,
//! `deserialize_with`/`with`, `deny_unknown_fields`, and the same error
//! texts. A missing `Option<_>` field (spelled `Option`) is `None`, as with
//! serde. Anything else serde's attributes can say (`flatten`, `tag`,
//! generics, enums, tuple structs) is a compile error naming the attribute:
//! keep serde's derive for those. Serialize-only attributes are ignored.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote};
use syn::{parse_macro_input, Data, DeriveInput, Error, Expr, ExprLit, Fields, Lit, LitStr, Path, Type};

#[proc_macro_derive(Deserialize, attributes(serde))]
pub fn derive_deserialize(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// How a missing field gets its value.
enum Missing {
    /// `missing field` error (or `None` for an `Option`).
    Required,
    /// `Default::default()` of the field's type.
    Default,
    /// A function named by `default = "path"`.
    Call(Path),
}

struct Field {
    ident: syn::Ident,
    ty: Type,
    /// The name read; `aliases` are read too.
    name: String,
    aliases: Vec<String>,
    missing: Missing,
    skip: bool,
    with: Option<Path>,
}

struct Container {
    name: String,
    rename_all: Option<String>,
    default: bool,
    deny_unknown_fields: bool,
}

fn lit_str(expr: &Expr) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Ok(s.clone()),
        other => Err(Error::new_spanned(other, "expected a string")),
    }
}

fn container(input: &DeriveInput) -> syn::Result<Container> {
    let mut c =
        Container { name: input.ident.to_string(), rename_all: None, default: false, deny_unknown_fields: false };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            match key.as_str() {
                "rename_all" => c.rename_all = Some(meta.value()?.parse::<LitStr>()?.value()),
                "rename" => c.name = meta.value()?.parse::<LitStr>()?.value(),
                "default" if meta.input.is_empty() || meta.input.peek(syn::Token![,]) => c.default = true,
                "deny_unknown_fields" => c.deny_unknown_fields = true,
                _ => {
                    return Err(meta.error(format!(
                        "hearth_json::Deserialize does not read `#[serde({key} ...)]` on a struct: use serde's derive"
                    )))
                }
            }
            Ok(())
        })?;
    }
    Ok(c)
}

fn field(f: &syn::Field, c: &Container) -> syn::Result<Field> {
    let ident = f.ident.clone().ok_or_else(|| Error::new_spanned(f, "a named field"))?;
    let plain = ident.to_string();
    let plain = plain.strip_prefix("r#").unwrap_or(&plain).to_owned();
    let mut out = Field {
        name: rename(&plain, c.rename_all.as_deref()).map_err(|e| Error::new(Span::call_site(), e))?,
        ident,
        ty: f.ty.clone(),
        aliases: Vec::new(),
        missing: Missing::Required,
        skip: false,
        with: None,
    };
    for attr in f.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            match key.as_str() {
                "rename" if meta.input.peek(syn::Token![=]) => out.name = meta.value()?.parse::<LitStr>()?.value(),
                "rename" => meta.parse_nested_meta(|inner| {
                    let value = inner.value()?.parse::<LitStr>()?.value();
                    if inner.path.is_ident("deserialize") {
                        out.name = value;
                    }
                    Ok(())
                })?,
                "alias" => out.aliases.push(meta.value()?.parse::<LitStr>()?.value()),
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
                _ => {
                    return Err(meta.error(format!(
                        "hearth_json::Deserialize does not read `#[serde({key} ...)]` on a field: use serde's derive"
                    )))
                }
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// A field's name under a container's `rename_all`, as serde spells it
/// (`serde_derive`'s `RenameRule::apply_to_field`: ASCII case only).
fn rename(field: &str, rule: Option<&str>) -> Result<String, String> {
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

/// Whether a type is spelled `Option<_>` (what serde's missing field turns into `None`).
fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| s.ident == "Option"),
        Type::Group(g) => is_option(&g.elem),
        Type::Paren(p) => is_option(&p.elem),
        _ => false,
    }
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    if !input.generics.params.is_empty() {
        return Err(Error::new_spanned(
            &input.generics,
            "hearth_json::Deserialize reads structs without generics or lifetimes: use serde's derive",
        ));
    }
    let named = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(n) => n,
            _ => return Err(Error::new_spanned(input, "hearth_json::Deserialize reads structs with named fields")),
        },
        _ => return Err(Error::new_spanned(input, "hearth_json::Deserialize reads structs: use serde's derive")),
    };
    let c = container(input)?;
    let fields = named.named.iter().map(|f| field(f, &c)).collect::<syn::Result<Vec<_>>>()?;

    let ty = &input.ident;
    // serde names the Rust type here, not its `rename`.
    let expecting = format!("struct {}", input.ident);
    let struct_name = &c.name;
    let read: Vec<&Field> = fields.iter().filter(|f| !f.skip).collect();
    // The key table: every read field's name in order (serde's `FIELDS`),
    // then the aliases. A key's position picks its field.
    let main: Vec<&str> = read.iter().map(|f| f.name.as_str()).collect();
    let mut keys: Vec<&str> = main.clone();
    let mut positions: Vec<Vec<usize>> = (0..read.len()).map(|i| vec![i]).collect();
    for (i, f) in read.iter().enumerate() {
        for alias in &f.aliases {
            positions[i].push(keys.len());
            keys.push(alias);
        }
    }
    let count = main.len();
    let deny = c.deny_unknown_fields;

    let slot = |i: usize| format_ident!("__f{}", i);
    let with_type = |i: usize| format_ident!("__With{}", i);
    // A field read with `deserialize_with` goes through a newtype of its own.
    let wrappers = read.iter().enumerate().filter_map(|(i, f)| {
        let path = f.with.as_ref()?;
        let w = with_type(i);
        let t = &f.ty;
        Some(quote! {
            struct #w(#t);
            impl<'de> ::hearth_json::__private::serde::Deserialize<'de> for #w {
                fn deserialize<__D: ::hearth_json::__private::serde::Deserializer<'de>>(
                    __d: __D,
                ) -> ::core::result::Result<Self, __D::Error> {
                    #path(__d).map(#w)
                }
            }
        })
    });
    let declare = read.iter().enumerate().map(|(i, f)| {
        let s = slot(i);
        let t = match f.with {
            Some(_) => {
                let w = with_type(i);
                quote! { #w }
            }
            None => {
                let t = &f.ty;
                quote! { #t }
            }
        };
        quote! { let mut #s: ::core::option::Option<#t> = ::core::option::Option::None; }
    });
    // Each arm is one call of a reader shared by every field of the same type.
    let arms = read.iter().enumerate().map(|(i, f)| {
        let s = slot(i);
        let name = &f.name;
        let pats = positions[i].iter();
        quote! { #(#pats)|* => ::hearth_json::__private::field(&mut __m, &mut #s, #name)?, }
    });
    let container_default = c.default.then(|| {
        quote! { let __default: #ty = ::core::default::Default::default(); }
    });
    let fallback = |f: &Field| -> Tokens {
        let ident = &f.ident;
        match &f.missing {
            Missing::Default => quote! { ::core::default::Default::default() },
            Missing::Call(path) => quote! { #path() },
            Missing::Required if c.default => quote! { __default.#ident },
            Missing::Required if f.skip => quote! { ::core::default::Default::default() },
            Missing::Required if f.with.is_none() && is_option(&f.ty) => quote! { ::core::option::Option::None },
            Missing::Required => {
                let name = &f.name;
                quote! {
                    return ::core::result::Result::Err(
                        <__A::Error as ::hearth_json::__private::serde::de::Error>::missing_field(#name),
                    )
                }
            }
        }
    };
    let mut next_slot = 0;
    let build = fields.iter().map(|f| {
        let ident = &f.ident;
        if f.skip {
            let value = fallback(f);
            quote! { #ident: #value }
        } else {
            let s = slot(next_slot);
            next_slot += 1;
            let value = fallback(f);
            let unwrap = if f.with.is_some() { quote! { __v.0 } } else { quote! { __v } };
            quote! { #ident: match #s { ::core::option::Option::Some(__v) => #unwrap, ::core::option::Option::None => #value } }
        }
    });

    Ok(quote! {
        #[automatically_derived]
        impl<'de> ::hearth_json::__private::serde::Deserialize<'de> for #ty {
            fn deserialize<__D: ::hearth_json::__private::serde::Deserializer<'de>>(
                __d: __D,
            ) -> ::core::result::Result<Self, __D::Error> {
                const FIELDS: &[&str] = &[#(#main),*];
                const KEYS: &[&str] = &[#(#keys),*];
                struct __Visitor;
                impl<'de> ::hearth_json::__private::serde::de::Visitor<'de> for __Visitor {
                    type Value = #ty;
                    fn expecting(&self, f: &mut ::core::fmt::Formatter) -> ::core::fmt::Result {
                        f.write_str(#expecting)
                    }
                    #[allow(unused_mut)]
                    fn visit_map<__A: ::hearth_json::__private::serde::de::MapAccess<'de>>(
                        self,
                        mut __m: __A,
                    ) -> ::core::result::Result<#ty, __A::Error> {
                        #(#wrappers)*
                        #(#declare)*
                        while let ::core::option::Option::Some(__k) = __m.next_key_seed(
                            ::hearth_json::__private::Key { keys: KEYS, fields: FIELDS, count: #count, deny: #deny },
                        )? {
                            match __k {
                                #(#arms)*
                                _ => ::hearth_json::__private::skip(&mut __m)?,
                            }
                        }
                        #container_default
                        ::core::result::Result::Ok(#ty { #(#build),* })
                    }
                }
                __d.deserialize_struct(#struct_name, FIELDS, __Visitor)
            }
        }
    })
}
