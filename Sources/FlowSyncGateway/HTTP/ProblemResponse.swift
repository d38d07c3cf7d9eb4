import FlowSyncGatewayCore
import HTTPTypes
import Hummingbird
import NIOCore

extension Problem {
    /// The document as an `application/problem+json` response; `closing` adds
    /// `Connection: close` (the rest of an oversized body is not read).
    func response(closing: Bool = false) -> Response {
        var headers: HTTPFields = [.contentType: "application/problem+json"]
        if closing { headers[.connection] = "close" }
        if status == 401 { headers[.wwwAuthenticate] = "Bearer" }
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }
}

extension RequestError {
    func response(closing: Bool = false) -> Response { Problem(self).response(closing: closing) }
}

/// JSON bytes as a 200 (or `status`) response.
func jsonResponse(_ bytes: [UInt8], status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) -> Response {
    var headers: HTTPFields = [.contentType: "application/json"]
    headers.append(contentsOf: extra)
    return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
}

/// An embedded file (the demo page, the JS client). `no-cache`: a browser revalidates, so
/// a new gateway's client is used at the next load.
func staticResponse(_ text: String, type: String) -> Response {
    let headers: HTTPFields = [.contentType: type, .cacheControl: "no-cache"]
    return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
}

/// Turns what the router throws (no route, a wrong method, a body over the limit) into
/// problem documents, so every error answer of the API is RFC 9457.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            switch error.status {
            case .notFound:
                if let allowed = GatewayRoutes.allowedMethods(for: request.uri.path) {
                    var response = RequestError(
                        .methodNotAllowed, "\(request.method) is not served on \(request.uri.path)"
                    ).response()
                    response.headers[.allow] = allowed  // RFC 9110: a 405 lists what is allowed
                    return response
                }
                return RequestError(.notFound, "no route \(request.uri.path)").response()
            case .contentTooLarge:
                return RequestError(.bodyTooLarge, "the body is over the limit").response(closing: true)
            default:
                return Problem(
                    status: Int(error.status.code), name: "http-\(error.status.code)", title: error.status.reasonPhrase,
                    detail: error.body ?? error.status.reasonPhrase, code: nil
                ).response()
            }
        }
    }
}

/// CORS for the configured origins: `["*"]` allows any; a listed origin is echoed back;
/// an unlisted one gets no CORS headers (the browser refuses). Preflights (`OPTIONS` with
/// `Access-Control-Request-Method`) are answered here with 204.
struct CORSPolicyMiddleware<Context: RequestContext>: RouterMiddleware {
    let origins: [String]

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let origin = request.headers[.origin], let allowed = allowedOrigin(origin) else {
            return try await next(request, context)
        }
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            var headers = corsHeaders(allowed)
            headers[.accessControlAllowMethods] = "GET, POST, OPTIONS"
            headers[.accessControlAllowHeaders] = "Authorization, Content-Type, Idempotency-Key, Last-Event-ID"
            headers[.accessControlMaxAge] = "600"
            return Response(status: .noContent, headers: headers)
        }
        var response = try await next(request, context)
        response.headers.append(contentsOf: corsHeaders(allowed))
        return response
    }

    private func allowedOrigin(_ origin: String) -> String? {
        if origins.contains("*") { return "*" }
        return origins.contains(origin) ? origin : nil
    }

    private func corsHeaders(_ allowed: String) -> HTTPFields {
        var headers: HTTPFields = [.accessControlAllowOrigin: allowed]
        if allowed != "*" { headers[.vary] = "Origin" }
        headers[.accessControlExposeHeaders] = "Location, Retry-After"
        return headers
    }
}
