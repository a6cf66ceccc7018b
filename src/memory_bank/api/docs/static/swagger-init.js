// Swagger UI over the handwritten spec. The spec declares bearerAuth, so "Authorize"
// asks for a token; persistAuthorization keeps it across reloads so "Try it out" just works.

// Swagger UI reads every media type that says "json" as JSON and quotes a string example
// as one JSON string, so the JSON-lines import would be sent its own example as a single
// quoted line and refuse it. A JSON-lines body's example is already its text: use it as is.
function JsonLinesExamples(system) {
  const sample = system.fn.getSampleSchema;
  return {
    fn: {
      getSampleSchema: function (schema, contentType, config, example) {
        if (/ndjson/i.test(contentType || "") && typeof example === "string") {
          return example;
        }
        return sample.apply(this, arguments);
      },
    },
  };
}

window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: true,
    displayRequestDuration: true,
    filter: true,
    presets: [SwaggerUIBundle.presets.apis],
    plugins: [JsonLinesExamples],
    layout: "BaseLayout",
  });
});
