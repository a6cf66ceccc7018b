// Redoc over the handwritten spec: the readable reference, one page, searchable.
Redoc.init("openapi.json", { expandResponses: "200,201", hideDownloadButton: false }, document.getElementById("redoc"));
