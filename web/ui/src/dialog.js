// In-page dialogs instead of the browser's prompt() and confirm(): a
// modal <dialog> (focus stays inside it, Escape cancels) in the page's
// own style, that keyboard and screen-reader users can use.
import { h } from "./util.js";

let seq = 0;

// ask shows a dialog and resolves with the typed text (with input), true
// (without), or null when cancelled.
//   title   the question, as the dialog's heading
//   text    a longer explanation (optional)
//   input   {value, label}: a text field, its first value and label
//   ok      the confirming button's label ("OK")
//   danger  the confirming button does something that cannot be undone
export function ask({ title, text, input, ok = "OK", cancel = "Cancel", danger = false }) {
  return new Promise((resolve) => {
    const id = `dlg${++seq}`;
    const field = input ? h("input.dlginput", { id: `${id}-in`, type: "text", value: input.value || "", spellcheck: "false", autocomplete: "off" }) : null;
    const okBtn = h(`button.dlgok${danger ? ".danger" : ""}`, { type: "submit", value: "ok" }, ok);
    const form = h(
      "form.dlgform",
      { method: "dialog" },
      h("h2.dlgtitle", { id: `${id}-t` }, title),
      text ? h("p.dlgtext", { id: `${id}-d` }, text) : null,
      field ? h("label.dlglabel", { for: field.id }, input.label || title) : null,
      field,
      h("div.dlgbuttons", h("button.dlgcancel", { type: "button", onclick: () => dlg.close("cancel") }, cancel), okBtn),
    );
    const dlg = h("dialog.dlg", { "aria-labelledby": `${id}-t`, ...(text ? { "aria-describedby": `${id}-d` } : {}) }, form);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      if (field && !field.value.trim()) {
        field.focus();
        return;
      }
      dlg.close("ok");
    });
    dlg.addEventListener("close", () => {
      const v = dlg.returnValue === "ok" ? (field ? field.value.trim() : true) : null;
      dlg.remove();
      resolve(v);
    });
    document.body.append(dlg);
    dlg.showModal();
    if (field) {
      field.focus();
      field.select();
    } else okBtn.focus();
  });
}
