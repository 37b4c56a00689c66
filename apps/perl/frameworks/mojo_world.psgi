# Mojolicious serving TechEmpower's test types over SQLite or PostgreSQL (DBI, a connection per process),
# fortunes through its ep templates (escaped by <%= %>), as a PSGI app.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;
use lib dirname(File::Spec->rel2abs(__FILE__));
use World;
use Mojolicious::Lite;
use Mojo::Server::PSGI;

app->log->level('error');
app->renderer->paths(["$World::DIR/views"]);
# TechEmpower's rules ask for a Server header on every answer; Mojolicious sets one only in
# its own daemon, not as a PSGI app.
app->hook(after_dispatch => sub { shift->res->headers->server('Mojolicious') });

get '/plaintext' => sub { shift->render(text => 'Hello, World!', format => 'txt') };
get '/json' => sub { shift->render(json => {message => 'Hello, World!'}) };
get '/db' => sub { shift->render(json => World::row(World::random_id())) };
get '/queries' => sub {
    my $c = shift;
    $c->render(json => [map { World::row($_) } World::random_ids(World::query_count($c->param('queries')))]);
};
get '/updates' => sub {
    my $c = shift;
    my @rows = map { World::row($_) } World::random_ids(World::query_count($c->param('queries')));
    $_->{randomNumber} = World::random_id() for @rows;
    World::update_rows(\@rows);
    $c->render(json => \@rows);
};
get '/fortunes' => sub { shift->render('fortunes', fortunes => World::sorted_fortunes()) };

Mojo::Server::PSGI->new(app => app)->to_psgi_app;
