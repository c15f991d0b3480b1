// SQL names of the embedded store's tables: quoted identifiers, and a collection's table, whose name
// keeps MongoDB's case-sensitive collection names apart in SQLite's case-insensitive ones.

export function quoteIdent(name: string): string {
  return '"' + name.replaceAll('"', '""') + '"';
}

/**
 * The table of a collection. SQLite compares names without regard to ASCII case and MongoDB does not
 * (Foo and foo are two collections), so each capital letter is written as a $ and the letter in lower
 * case: $ cannot be part of a collection's name. Foo is kept in the table "$foo".
 */
export function tableOf(collection: string): string {
  return collection.replace(/[A-Z]/g, (letter) => '$' + letter.toLowerCase());
}

/** The collection whose table this is (tableOf the other way). */
export function collectionOf(table: string): string {
  return table.replace(/\$([a-z])/g, (_, letter: string) => letter.toUpperCase());
}
