// Swagger UI over the handwritten spec. The spec declares bearerAuth, so "Authorize"
// asks for a token; persistAuthorization keeps it across reloads so "Try it out" just works.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: true,
    displayRequestDuration: true,
    filter: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
