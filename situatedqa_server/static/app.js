// Progressive enhancement only: every page works without JavaScript.
document.addEventListener("DOMContentLoaded", () => {
  // Confirm destructive buttons (deleting a submission gives no quota back).
  for (const button of document.querySelectorAll("button.danger")) {
    button.addEventListener("click", (event) => {
      if (!window.confirm("Delete this submission? Its test quota is not given back.")) {
        event.preventDefault();
      }
    });
  }
  // Submit filter forms when a select changes.
  for (const select of document.querySelectorAll("form.filters select")) {
    select.addEventListener("change", () => select.form.submit());
  }
});
