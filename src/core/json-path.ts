/** A JSON pointer as people read it: /messages/0/role → messages[0].role */
export function jsonPath(pointer: string): string {
  return pointer
    .split("/")
    .filter(Boolean)
    .map((seg, i) => (/^\d+$/.test(seg) ? `[${seg}]` : i === 0 ? seg : `.${seg}`))
    .join("");
}
